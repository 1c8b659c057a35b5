"""The scripting commands and the list filters on a busy database: `cascade serve` (its own
process, manual launcher) over a store holding many runs. Prints the latency of GET /api/runs
whole, with `limit` and with `state`, and the wall time of `cascade runs`, `cascade run show` and
`cascade results --kernels --format csv` as a script would call them (Python start-up included).

    python benchmarks/bench_cli.py [--runs 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from procstats import free_port  # benchmarks/procstats.py

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TOKEN = "bench-token"


async def seed(data_dir: Path, runs: int) -> None:
    """`runs` runs of 3 sims each on one trace, every tenth one failed, the rest pending."""
    from cascade_core.models import Heartbeat, RunEntry
    from cascade_server.events import Broker
    from cascade_server.gpu_configs import scan_gpu_configs
    from cascade_server.samples import sample_trace
    from cascade_server.storage import Store

    trace = sample_trace(ROOT / "samples").model_copy(update={"id": "bench-sm70", "sample": False})
    configs = scan_gpu_configs(ROOT / "samples" / "accelsim")
    store = await Store(data_dir / "cascade.db", Broker()).open()
    await store.traces.put_trace(trace)
    entries = [RunEntry(gpu_config=name, count=1) for name in ("SM7_QV100", "SM7_GV100", "SM7_TITANV")]
    for number in range(runs):
        run = await store.runs.create_run(trace, entries, configs)
        if number % 10 == 0:
            for sim in run.sims:
                await store.sim_states.mark_launching(sim.id, None)
                await store.sim_states.heartbeat(
                    sim.id, Heartbeat(state="failed", exit_code=1, error="bench")
                )
    await store.close()


def timed(argv: list[str], env: dict[str, str], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def main(runs: int) -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="cascade-bench-cli-"))
    await seed(data_dir, runs)
    port = free_port()
    env = {
        **os.environ,
        "CASCADE_TOKEN": TOKEN,
        "CASCADE_LAUNCHER": "manual",
        "CASCADE_SAMPLES": "0",
        "CASCADE_S3_ENDPOINT": "http://127.0.0.1:9",
    }  # no embedded S3: not what is measured
    serve = subprocess.Popen(
        [sys.executable, "-m", "cascade_tui.cli", "serve", "--port", str(port), "--data-dir", str(data_dir)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(
            base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
        ) as http:
            while True:
                try:
                    if (await http.get("/api/health")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.1)
            print(f"{runs} runs of 3 sims")
            for query in ("", "?limit=20", "?state=failed", "?state=failed&limit=5"):
                times = []
                for _ in range(10):
                    start = time.perf_counter()
                    resp = await http.get(f"/api/runs{query}")
                    times.append(time.perf_counter() - start)
                    resp.raise_for_status()
                print(
                    f"  GET /api/runs{query:<22} {statistics.median(times) * 1000:7.1f} ms median, "
                    f"{len(resp.json()):5d} runs, {len(resp.content) / 1024:8.1f} KB"
                )
            run_id = (await http.get("/api/runs?limit=1")).json()[0]["id"]
        cli = [sys.executable, "-m", "cascade_tui.cli"]
        cli_env = {**env, "CASCADE_URL": url}
        print("  wall time of a command, as a script calls it (median of 5):")
        for args in (
            ["runs", "--limit", "20"],
            ["runs", "--state", "failed"],
            ["run", "show", run_id],
            ["results", run_id, "--kernels", "--format", "csv"],
        ):
            print(f"    cascade {' '.join(args):<45} {timed(cli + args, cli_env) * 1000:7.0f} ms")
    finally:
        serve.terminate()
        serve.wait(30)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    asyncio.run(main(parser.parse_args().runs))
