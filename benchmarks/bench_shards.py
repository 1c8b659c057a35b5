"""Sharded simulation (issue 23) with the real simulator on the local launcher: the wall time of
one run of the demo trace `tinyformer-step-sm70` on SM7_QV100 with 1, 2 and 4 shards (1 warm-up
kernel), one run after another, and the merged total cycles' error against the 1-shard run.
Prints the host's cores (a local launcher runs CASCADE_LOCAL_SLOTS sims at once, the CPU count by
default, so more shards than cores cannot all run at once). Asserts nothing about time.

    python benchmarks/bench_shards.py --prefix DIR (an install prefix with a finished build)
        [--shards 1 2 4] [--config SM7_QV100] [--framework TARBALL --gpgpu-sim TARBALL]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from procstats import start_serve, wait_for  # benchmarks/procstats.py

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT.parent / "shared" / "accelsim-src"
FRAMEWORK = SOURCES / "accel-sim-framework-73f9fac68a1a717750da54d2d867c7524b47b4c3.tar.gz"
GPGPU_SIM = SOURCES / "gpgpu-sim_distribution-667834cfe5214523edd7769aeab77f91b7137686.tar.gz"
TRACE = "tinyformer-step-sm70"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix", type=Path, required=True, help="an install prefix with a finished build")
    parser.add_argument("--shards", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--config", default="SM7_QV100")
    parser.add_argument("--framework", type=Path, default=FRAMEWORK)
    parser.add_argument("--gpgpu-sim", type=Path, default=GPGPU_SIM)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cascade-bench-shards-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CASCADE_") and k != "LD_LIBRARY_PATH"}
    data = tmp / "data"
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "cascade_tui.cli",
            "simulator",
            "install",
            "--data-dir",
            data,
            "--prefix",
            args.prefix,
            "--framework",
            args.framework,
            "--gpgpu-sim",
            args.gpgpu_sim,
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    if installed.returncode != 0:
        sys.exit(f"cascade simulator install failed:\n{installed.stdout}{installed.stderr}")
    serve, port = start_serve(env, data, tmp / "serve.log")
    results: list[tuple[int, float, list[int], str]] = []
    try:
        token = wait_for(
            lambda: (data / "token").exists() and (data / "token").read_text().strip(), 60, "the token"
        )
        http = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {token}"})
        wait_for(
            lambda: {t["id"]: t["state"] for t in http.get("/api/traces").json()}.get(TRACE) == "ready",
            180,
            "the demo trace ready",
        )
        slots = http.get("/api/launcher").json().get("slots")
        for shards in args.shards:
            posted = time.monotonic()
            resp = http.post(
                "/api/runs",
                json={
                    "trace_id": TRACE,
                    "entries": [{"gpu_config": args.config, "count": 1, "shards": shards}],
                },
            )
            if resp.status_code != 201:
                sys.exit(f"POST /api/runs with {shards} shards: {resp.status_code} {resp.text}")
            run_id = resp.json()["id"]
            run = wait_for(
                lambda run_id=run_id: (
                    (r := http.get(f"/api/runs/{run_id}").json())["state"] != "active" and r
                ),
                1800,
                f"the {shards}-shard run's end",
            )
            wall = time.monotonic() - posted
            kernels = http.get(f"/api/runs/{run_id}/kernels").json()
            results.append((shards, wall, [k["gpu_sim_cycle"] for k in kernels], run["state"]))
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=60)
    print(
        f"host: {os.cpu_count()} cores; local launcher slots: {slots}; trace {TRACE} on {args.config}, "
        "1 warm-up kernel, each run alone"
    )
    base = next((r for r in results if r[0] == 1), results[0])
    print(
        f"{'shards':>6} {'wall s':>8} {'speed-up':>8} {'kernels':>7} {'total cycles':>13} {'vs 1 shard':>10} "
        f"{'max kernel':>10}  state"
    )
    for shards, wall, cycles, state in results:
        total = sum(cycles)
        error = (total - sum(base[2])) / sum(base[2]) * 100 if base[2] else float("nan")
        worst = (
            max((abs(c - b) / b * 100 for c, b in zip(cycles, base[2]) if b), default=float("nan"))
            if len(cycles) == len(base[2])
            else float("nan")
        )
        print(
            f"{shards:>6} {wall:>8.1f} {base[1] / wall:>7.2f}x {len(cycles):>7} {total:>13,} {error:>+9.2f}% "
            f"{worst:>9.2f}%  {state}"
        )


if __name__ == "__main__":
    main()
