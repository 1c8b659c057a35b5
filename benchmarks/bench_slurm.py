"""A run of 256 stand-in sims on the slurm launcher, on the real single-node Slurm of
tests/slurm/slurm-single-node.sh (brought up if it is not running; needs root). `cascade serve`
runs in its own process. Prints the time from POST /api/runs to every sim having its Slurm job
id, and the squeue calls per minute while the sims run (counted by a `squeue` shim first on the
server's PATH), then cancels the run.

The sample configs have only three per arch and an entry holds at most 64 sims, so the run uses
four copies of SM7_QV100's config (a stand-in run replays the default recording for them).

    python benchmarks/bench_slurm.py [--sims 256] [--watch 60]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
from bench_local_runs import register_trace  # benchmarks/bench_local_runs.py
from procstats import free_port  # benchmarks/procstats.py

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TOKEN = "bench-token"
SCRIPT = ROOT / "tests" / "slurm" / "slurm-single-node.sh"
CONFIGS = ROOT / "samples" / "accelsim" / "gpu-simulator" / "gpgpu-sim" / "configs" / "tested-cfgs"


def ensure_slurm() -> None:
    if subprocess.run(["scontrol", "ping"], capture_output=True, text=True).stdout.count("UP"):
        return
    subprocess.run(["bash", str(SCRIPT), "up"], check=True)


def make_configs(root: Path, count: int) -> list[str]:
    """`count` sm_70 configs (copies of SM7_QV100) in an Accel-Sim layout without a simulator."""
    names = ["SM7_QV100"] + [f"SM7_QV100_{chr(ord('B') + i)}" for i in range(count - 1)]
    target = root / "gpu-simulator" / "gpgpu-sim" / "configs" / "tested-cfgs"
    for name in names:
        shutil.copytree(CONFIGS / "SM7_QV100", target / name)
    return names


def squeue_shim(directory: Path, calls: Path) -> None:
    """A `squeue` that logs the time of each call, then runs the real one."""
    real = shutil.which("squeue")
    directory.mkdir(parents=True, exist_ok=True)
    shim = directory / "squeue"
    shim.write_text(f'#!/bin/sh\ndate +%s.%N >> "{calls}"\nexec "{real}" "$@"\n')
    shim.chmod(0o755)


async def main(sims: int, watch: float) -> None:
    ensure_slurm()
    work = Path(tempfile.mkdtemp(prefix="cascade-bench-slurm-"))
    data_dir, calls = work / "data", work / "squeue-calls"
    await register_trace(data_dir)
    configs = make_configs(work / "accelsim", -(-sims // 64))
    squeue_shim(work / "bin", calls)
    port = free_port()
    env = {
        **os.environ,
        "PATH": f"{work / 'bin'}:{os.environ['PATH']}",
        "CASCADE_TOKEN": TOKEN,
        "CASCADE_SAMPLES": "0",
        "CASCADE_S3_PORT": str(free_port()),
        "CASCADE_LAUNCHER": "slurm",
        "CASCADE_SLURM_LOCAL": "1",
        "CASCADE_ACCELSIM_DIR": str(work / "accelsim"),
        "CASCADE_REPLAY_SPEED": "1",
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "cascade_tui.cli", "serve", "--port", str(port), "--data-dir", str(data_dir)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(work / "serve.log", "wb"),
    )
    try:
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", timeout=60, headers={"Authorization": f"Bearer {TOKEN}"}
        ) as http:
            for _ in range(300):
                try:
                    if (await http.get("/api/health")).status_code == 200:
                        break
                except httpx.TransportError:
                    await asyncio.sleep(0.1)
            entries = [{"gpu_config": c, "count": min(64, sims - 64 * i)} for i, c in enumerate(configs)]
            started = time.monotonic()
            resp = await http.post("/api/runs", json={"trace_id": "bench-sm70", "entries": entries})
            post_s = time.monotonic() - started
            run = resp.json()
            assert resp.status_code == 201, resp.text
            while True:
                detail = (await http.get(f"/api/runs/{run['id']}")).json()
                if all(s["launcher_ref"] or s["state"] == "failed" for s in detail["sims"]):
                    break
                await asyncio.sleep(0.05)
            all_ids_s = time.monotonic() - started
            failed = [s for s in detail["sims"] if s["state"] == "failed"]
            watch_from = time.time()
            await asyncio.sleep(watch)
            detail = (await http.get(f"/api/runs/{run['id']}")).json()
            watch_to = time.time()
            await http.post(f"/api/runs/{run['id']}/cancel")
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    stamps = [float(t) for t in calls.read_text().split()] if calls.exists() else []
    in_window = [t for t in stamps if watch_from <= t <= watch_to]
    jobs = {s["launcher_ref"].split("_")[0] for s in detail["sims"] if s["launcher_ref"]}
    load = os.getloadavg()
    print(
        f"host: {os.cpu_count()} CPUs, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
        "(1/5/15 min; figures scale with it on a shared machine)"
    )
    print(
        f"sims: {sims} in {len(entries)} entries -> {len(jobs)} sbatch job arrays; failed at submit: {len(failed)}"
    )
    print(f"POST /api/runs answered in {post_s:.2f} s")
    print(f"POST -> every sim has a Slurm job id: {all_ids_s:.2f} s (target: under 5 s)")
    print(
        f"squeue calls while the sims ran: {len(in_window)} in {watch_to - watch_from:.0f} s = "
        f"{len(in_window) / (watch_to - watch_from) * 60:.1f} per minute (for all {sims} sims)"
    )
    print(
        "sim states after the watch:",
        dict(Counter(s["state"] for s in detail["sims"])),
        "Slurm says:",
        dict(Counter(s["launcher_state"] for s in detail["sims"])),
    )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=256)
    parser.add_argument("--watch", type=float, default=60.0, help="seconds to count squeue calls")
    args = parser.parse_args()
    asyncio.run(main(args.sims, args.watch))
