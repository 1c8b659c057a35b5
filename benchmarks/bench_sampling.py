"""Kernel sampling on the real simulator: for the demo traces and the real public traces, one full
run against `identical` and `stratified` runs of the same trace and config, one at a time (so each
wall time is its own). Prints per run: kernels and warp instructions simulated of the trace's, the
wall time and its speed-up, the total-cycle error against the full run, and the worst per-kernel
error. Asserts nothing.

    python benchmarks/bench_sampling.py --prefix /var/cache/cascade-ci/simulator
        [--framework TARBALL --gpgpu-sim TARBALL --configs DIR] (default: ../shared/ beside the checkout)
        [--trace ID=CONFIG ...] [--public DIR ...]
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
SHARED = ROOT.parent / "shared"
SOURCES = SHARED / "accelsim-src"
FRAMEWORK = SOURCES / "accel-sim-framework-73f9fac68a1a717750da54d2d867c7524b47b4c3.tar.gz"
GPGPU_SIM = SOURCES / "gpgpu-sim_distribution-667834cfe5214523edd7769aeab77f91b7137686.tar.gz"
# (trace, config, a folder to upload it from or None for a demo trace the server seeds)
TRACES = [
    ("tinyformer-step-sm70", "SM7_QV100", None),
    ("tinyformer-step-sm75", "SM75_RTX2060", None),
    ("torch3-k5-13-sm70", "SM7_QV100", SHARED / "traces-public" / "torch3-k5-13-sm70"),
    ("flashinfer-gemm-sm80", "SM80_A100", SHARED / "traces-public" / "flashinfer-gemm-sm80"),
]
METHODS = ("none", "identical", "stratified")


def cascade(*args: str | Path, env: dict[str, str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cascade_tui.cli", *map(str, args)], env=env, capture_output=True, text=True
    )
    if result.returncode != 0:
        sys.exit(f"cascade {' '.join(map(str, args[:2]))} failed:\n{result.stdout}{result.stderr}")


def one_run(http: httpx.Client, trace: str, config: str, method: str) -> tuple[float, dict, list[dict]]:
    entry = {"gpu_config": config, "count": 1, **({"sampling": method} if method != "none" else {})}
    posted = time.monotonic()
    run = http.post("/api/runs", json={"trace_id": trace, "entries": [entry]}).json()
    done = wait_for(
        lambda: (r := http.get(f"/api/runs/{run['id']}").json())["state"] != "active" and r, 3600, "a run"
    )
    wall = time.monotonic() - posted
    sim = done["sims"][0]
    return wall, sim, http.get(f"/api/sims/{sim['id']}/results").json()["kernels"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--prefix", type=Path, required=True, help="an install prefix holding a finished build"
    )
    parser.add_argument("--framework", type=Path, default=FRAMEWORK)
    parser.add_argument("--gpgpu-sim", type=Path, default=GPGPU_SIM)
    parser.add_argument("--configs", type=Path, default=SHARED / "accelsim-configs")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cascade-bench-sampling-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CASCADE_") and k != "LD_LIBRARY_PATH"}
    data = tmp / "data"
    cascade(
        "simulator", "install", "--data-dir", data, "--prefix", args.prefix, "--framework", args.framework,
        "--gpgpu-sim", args.gpgpu_sim, "--configs", args.configs, env=env,
    )  # fmt: skip
    serve, port = start_serve(env, data, tmp / "serve.log")
    rows = []
    try:
        token = wait_for(
            lambda: (data / "token").exists() and (data / "token").read_text().strip(), 60, "token"
        )
        base = f"http://127.0.0.1:{port}"
        http = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60)
        client_env = {**env, "CASCADE_URL": base, "CASCADE_TOKEN": token, "CASCADE_DATA_DIR": str(data)}
        for trace, _, folder in TRACES:
            if folder is not None and folder.is_dir():
                cascade("upload", folder, "--trace-id", trace, env=client_env)
        for trace, config, folder in TRACES:
            if folder is not None and not folder.is_dir():
                continue
            wait_for(
                lambda t=trace: (
                    {x["id"]: x["state"] for x in http.get("/api/traces").json()}.get(t) == "ready"
                ),
                300,
                f"{trace} ready",
            )
            full_wall, _, full = one_run(http, trace, config, "none")
            full_cycles = {k["kernel_index"]: k["gpu_sim_cycle"] for k in full if k.get("gpu_sim_cycle")}
            for method in METHODS[1:]:
                wall, sim, kernels = one_run(http, trace, config, method)
                cycles = {k["kernel_index"]: k["gpu_sim_cycle"] for k in kernels if k.get("gpu_sim_cycle")}
                both = sorted(set(full_cycles) & set(cycles))
                total_full = sum(full_cycles[i] for i in both)
                total = sum(cycles[i] for i in both)
                worst = max(
                    (abs(cycles[i] - full_cycles[i]) / full_cycles[i] * 100 for i in both), default=0.0
                )
                info = sim.get("sampling") or {}
                rows.append(
                    (
                        trace,
                        config,
                        method,
                        f"{info.get('kernels_simulated')}/{info.get('kernels')}",
                        f"{info.get('instructions_simulated')}/{info.get('instructions')}",
                        f"{wall:.0f} s vs {full_wall:.0f} s ({full_wall / wall:.1f}x)",
                        f"{(total - total_full) / total_full * 100:+.3f}%" if total_full else "-",
                        f"{worst:.2f}%",
                        f"{info.get('error_pct')}%",
                    )
                )
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=60)
    header = ("trace", "config", "method", "kernels", "warp insts", "wall", "total", "worst kernel", "stated")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(str(v).ljust(w) for v, w in zip(row, widths)))
    print(
        f"(kernels and warp instructions: simulated / the trace's; on {os.cpu_count()} cores, one run at a time)"
    )


if __name__ == "__main__":
    main()
