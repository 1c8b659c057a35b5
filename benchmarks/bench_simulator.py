"""The real simulator, end to end: `cascade simulator install` cold (a fresh prefix) and again with
the build reused, then `cascade serve` on a fresh data dir using it: the time from POST /api/runs
to the first real kernel result, and simulated kernels per minute over a run of both demo traces.
Prints the figures; asserts nothing about time.

    python benchmarks/bench_simulator.py [--prefix DIR (reuse a build there: no cold build)]
        [--framework TARBALL --gpgpu-sim TARBALL] (default: ../shared/accelsim-src/ beside the checkout)
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
RUNS = [("tinyformer-step-sm70", "SM7_QV100"), ("tinyformer-step-sm75", "SM75_RTX2060")]


def cascade(*args: str | Path, env: dict[str, str]) -> float:
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "cascade_tui.cli", *map(str, args)], env=env, capture_output=True, text=True
    )
    if result.returncode != 0:
        sys.exit(f"cascade {' '.join(map(str, args[:2]))} failed:\n{result.stdout}{result.stderr}")
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--prefix", type=Path, help="an install prefix to reuse (default: a cold build in a temp dir)"
    )
    parser.add_argument("--framework", type=Path, default=FRAMEWORK)
    parser.add_argument("--gpgpu-sim", type=Path, default=GPGPU_SIM)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cascade-bench-sim-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CASCADE_") and k != "LD_LIBRARY_PATH"}
    prefix = args.prefix or tmp / "prefix"
    sources = ["--framework", args.framework, "--gpgpu-sim", args.gpgpu_sim]
    cold = None
    if args.prefix is None:
        cold = cascade(
            "simulator", "install", "--data-dir", tmp / "cold", "--prefix", prefix, *sources, env=env
        )
    data = tmp / "data"
    reused = cascade("simulator", "install", "--data-dir", data, "--prefix", prefix, *sources, env=env)

    serve, port = start_serve(env, data, tmp / "serve.log")
    try:
        token = wait_for(
            lambda: (data / "token").exists() and (data / "token").read_text().strip(), 60, "the token"
        )
        http = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {token}"})

        def demo_ready():
            states = {t["id"]: t["state"] for t in http.get("/api/traces").json()}
            return all(states.get(trace) == "ready" for trace, _ in RUNS)

        wait_for(demo_ready, 180, "the demo traces ready")
        posted = time.monotonic()
        run_ids = [
            http.post(
                "/api/runs", json={"trace_id": trace, "entries": [{"gpu_config": config, "count": 1}]}
            ).json()["id"]
            for trace, config in RUNS
        ]
        wait_for(
            lambda: any(http.get(f"/api/runs/{r}/kernels").json() for r in run_ids), 300, "a kernel result"
        )
        first_kernel = time.monotonic() - posted
        runs = wait_for(
            lambda: (
                [run for r in run_ids if (run := http.get(f"/api/runs/{r}").json())["state"] != "active"]
                if all(http.get(f"/api/runs/{r}").json()["state"] != "active" for r in run_ids)
                else None
            ),
            900,
            "the runs' end",
        )
        wall = time.monotonic() - posted
        kernels = sum(len(http.get(f"/api/runs/{r}/kernels").json()) for r in run_ids)
        states = [run["state"] for run in runs]
        replay = [run["replay"] for run in runs]
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=60)
    print(
        f"install, cold build:            {cold:.1f} s"
        if cold is not None
        else f"install, cold build:            (skipped: --prefix {prefix})"
    )
    print(f"install, build reused:          {reused:.1f} s")
    print(f"POST /api/runs -> first kernel: {first_kernel:.1f} s")
    print(
        f"demo runs ({', '.join(c for _, c in RUNS)}, at once on {os.cpu_count()} cores): {kernels} kernels in "
        f"{wall:.1f} s = {kernels / wall * 60:.1f} simulated kernels per minute; states {states}, replay {replay}"
    )


if __name__ == "__main__":
    main()
