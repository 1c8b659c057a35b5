"""The real Kineto profiles in ../shared/profiles (see its README) and trace directories built from
them: a trace whose kernels are one step of the profile, as NVBit would have traced that step."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from cascade_core.models import GpuConfig, KernelStat, SimResults
from tests.conftest import sim_summary

PROFILES = Path(__file__).resolve().parents[1] / "data" / "profiles"  # copied from ../shared/profiles
SAMPLED = PROFILES / "hta-sampled-rank0-2steps.json.gz"  # 2 steps, 1,154 kernels, 4 streams
A100 = PROFILES / "hta-a100-control-6steps.json.gz"  # 6 steps, 8,568 kernels

STATS_HEADER = (
    "kernel id, kernel mangled name, grid_dimX, grid_dimY, grid_dimZ, #blocks, block_dimX, "
    "block_dimY, block_dimZ, #threads, total_insts, total_reported_insts"
)


@lru_cache(maxsize=2)
def load(path: Path) -> dict[str, Any]:
    return json.loads(gzip.decompress(path.read_bytes()))


def steps_by_correlation(doc: dict[str, Any], pattern: str = "ProfilerStep#") -> list[list[dict[str, Any]]]:
    """Independently of the code under test: per ProfilerStep, its kernels (launch inside the
    step's CPU span, linked by correlation), in launch order."""
    events = doc["traceEvents"]
    steps = sorted(
        (e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith(pattern)),
        key=lambda e: e["ts"],
    )
    launches = {
        e["args"]["correlation"]: e["ts"]
        for e in events
        if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})
    }
    found: list[list[tuple[float, dict[str, Any]]]] = [[] for _ in steps]
    for kernel in (e for e in events if e.get("cat") == "kernel"):
        launched = launches[kernel["args"]["correlation"]]
        for number, step in enumerate(steps):
            if step["ts"] <= launched <= step["ts"] + step["dur"]:
                found[number].append((launched, kernel))
    return [
        [k for _, k in sorted(pairs, key=lambda p: (p[0], p[1]["args"]["correlation"]))] for pairs in found
    ]


def step_events(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(
        (
            e
            for e in doc["traceEvents"]
            if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")
        ),
        key=lambda e: e["ts"],
    )


def measured_wall_and_busy(step: dict[str, Any], kernels: list[dict[str, Any]]) -> tuple[float, float]:
    """A step's wall (CPU start until the CPU and its last kernel are done) and GPU busy time
    (union of its kernels), in ns, straight from the profile's events."""
    end = max([step["ts"] + step["dur"], *(k["ts"] + k["dur"] for k in kernels)])
    busy, cur_start, cur_end = 0.0, None, None
    for start, stop in sorted((k["ts"], k["ts"] + k["dur"]) for k in kernels):
        if cur_end is None or start > cur_end:
            busy += (cur_end - cur_start) if cur_end is not None else 0.0
            cur_start, cur_end = start, stop
        else:
            cur_end = max(cur_end, stop)
    busy += (cur_end - cur_start) if cur_end is not None else 0.0
    return (end - step["ts"]) * 1000.0, busy * 1000.0


def write_trace_dir(directory: Path, kernels: list[dict[str, Any]]) -> Path:
    """A tracer output directory whose kernels are these launches (kernel-1 .. kernel-N), names as
    the profiler wrote them (demangled, with commas: the header says how many columns)."""
    traces = directory / "traces"
    traces.mkdir(parents=True, exist_ok=True)
    rows = [STATS_HEADER]
    for number, kernel in enumerate(kernels, start=1):
        grid = kernel["args"].get("grid", [1, 1, 1])
        block = kernel["args"].get("block", [1, 1, 1])
        rows.append(
            f"kernel-{number}.trace, {kernel['name']}, {grid[0]}, {grid[1]}, {grid[2]}, "
            f"{grid[0] * grid[1] * grid[2]}, {block[0]}, {block[1]}, {block[2]}, "
            f"{block[0] * block[1] * block[2]}, 1000,1000"
        )
    (traces / "stats.csv").write_text("\n".join(rows) + "\n")
    return directory


def import_sampled_timing(directory: Path) -> None:
    """The first profiled step of SAMPLED as `directory`'s trace, its real timing imported with
    `cascade timeline import` (whatever share of the GPU time it covers)."""
    write_trace_dir(directory, steps_by_correlation(load(SAMPLED))[0][:15])
    argv = ["timeline", "import", str(SAMPLED), str(directory), "--min-coverage", "0"]
    done = subprocess.run([sys.executable, "-m", "cascade_tui.cli", *argv], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def sim_results(times_ns: list[float], *, trace_id: str = "t", config: str = "SM80_A100") -> SimResults:
    """A sim that finished kernel i (launch uid i + 1) in times_ns[i]."""
    sim = sim_summary(state="succeeded", done=len(times_ns), total=len(times_ns), gpu_config=config)
    return SimResults(
        sim=sim,
        trace_id=trace_id,
        gpu_config=GpuConfig(name=config, arch="sm_80", core_clock_mhz=1410.0),
        kernels=[
            KernelStat(
                sim_id=sim.id, kernel_index=i, kernel_name=f"k{i}", kernel_launch_uid=i + 1, sim_time_ns=t
            )
            for i, t in enumerate(times_ns)
        ],
        totals=sim.latest,
    )
