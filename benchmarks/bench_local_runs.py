"""A run on the local launcher at full replay speed: `cascade serve` (its own process) starts one
`cascade worker` per sim, each replaying a recorded Accel-Sim log as fast as it can. Prints the
time from POST /api/runs to the run's end, the sims' start-up latency (created -> first running
heartbeat) and the log lines committed per second.

    python benchmarks/bench_local_runs.py [--sims 6] [--slots 2]
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from procstats import free_port  # benchmarks/procstats.py

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CONFIGS = ["SM7_QV100", "SM7_GV100", "SM7_TITANV"]
TOKEN = "bench-token"


async def register_trace(data_dir: Path) -> None:
    from cascade_server.events import Broker
    from cascade_server.samples import sample_trace
    from cascade_server.storage import Store

    trace = sample_trace(ROOT / "samples").model_copy(update={"id": "bench-sm70", "sample": False})
    store = await Store(data_dir / "cascade.db", Broker()).open()
    await store.traces.put_trace(trace)
    await store.close()


async def main(sims: int, slots: int) -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="cascade-bench-"))
    await register_trace(data_dir)
    port = free_port()
    env = {
        **os.environ,
        "CASCADE_TOKEN": TOKEN,
        "CASCADE_LAUNCHER": "local",
        "CASCADE_SAMPLES": "0",
        "CASCADE_LOCAL_SLOTS": str(slots),
        "CASCADE_REPLAY_SPEED": "1000000",
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "cascade_tui.cli", "serve", "--port", str(port), "--data-dir", str(data_dir)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
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
            entries: list[dict[str, Any]] = [
                {"gpu_config": CONFIGS[i % len(CONFIGS)], "count": 1} for i in range(min(sims, 3))
            ]
            for i in range(sims - len(entries)):
                entries[i % len(entries)]["count"] += 1
            started = time.monotonic()
            run = (await http.post("/api/runs", json={"trace_id": "bench-sm70", "entries": entries})).json()
            while True:
                detail = (await http.get(f"/api/runs/{run['id']}")).json()
                if detail["state"] != "active":
                    break
                await asyncio.sleep(0.05)
            elapsed = time.monotonic() - started
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    lines = sum(
        len(
            gzip.decompress(
                (ROOT / "samples" / "recordings" / f"{s['gpu_config']}.log.gz").read_bytes()
            ).split(b"\n")
        )
        - 1
        for s in detail["sims"]
    )
    startup = [
        (datetime.fromisoformat(s["started_at"]) - datetime.fromisoformat(s["created_at"])).total_seconds()
        for s in detail["sims"]
        if s["started_at"]
    ]
    print(f"sims: {sims} on {slots} slots, run state: {detail['state']}")
    print(f"POST -> run finished: {elapsed:.2f} s")
    print(f"created -> running, first sim: {min(startup):.2f} s, median: {statistics.median(startup):.2f} s")
    print(f"log lines committed: {lines} ({lines / elapsed:,.0f} lines/s over the whole run)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=6)
    parser.add_argument("--slots", type=int, default=2)
    args = parser.parse_args()
    asyncio.run(main(args.sims, args.slots))
