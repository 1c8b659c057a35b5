"""The smoke run: a tiny trace that ships with Cascade (two small kernels of the demo trace
tinyformer-step-sm70: embedding and residual_add) on SM7_QV100, checked against the cycle counts
a real run of the pinned build printed. About 3 s; it proves the binary starts, finds its own
libcudart, reads a trace and simulates it exactly as the reference build did."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from cascade_core import simulator_layout as layout

TRACE = Path(__file__).resolve().parent / "smoke_trace"
CONFIG = "SM7_QV100"
# gpu_sim_cycle per kernel from a real run of the pinned commits (also kernel 1 of the full
# demo trace in samples-real/runs/SM7_QV100: 6,146).
EXPECTED_CYCLES = (6146, 5860)
TIMEOUT_S = 300.0

_CYCLE = re.compile(r"^gpu_sim_cycle = (\d+)\s*$", re.MULTILINE)
EXIT_LINE = "GPGPU-Sim: *** exit detected ***"


@dataclass(frozen=True)
class SmokeResult:
    passed: bool
    detail: str  # what was checked, or what went wrong
    seconds: float


def check_output(
    returncode: int, output: str, expected: tuple[int, ...] = EXPECTED_CYCLES
) -> tuple[bool, str]:
    """Pure: did this run print the expected cycles and the exit line?"""
    cycles = tuple(int(c) for c in _CYCLE.findall(output))
    if returncode != 0 or EXIT_LINE not in output:
        first = next((line for line in output.splitlines() if line.strip()), "no output")
        errors = [
            line for line in output.splitlines() if re.search(r"error|Error|ERROR|undefined|cannot", line)
        ]
        return False, f"exited with status {returncode}: {(errors or [first])[0][:300]}"
    if cycles != expected:
        return False, f"gpu_sim_cycle {list(cycles)}, expected {list(expected)}"
    return True, f"{len(cycles)} kernels on {CONFIG}, gpu_sim_cycle {', '.join(map(str, cycles))} as expected"


def run_smoke(accelsim: Path, env: dict[str, str], timeout: float = TIMEOUT_S) -> SmokeResult:
    """Run the tiny trace with this Accel-Sim tree; never raises for a failed run."""
    started = time.monotonic()
    config = accelsim / layout.TESTED_CFGS / CONFIG
    trace_config = accelsim / "gpu-simulator/configs/tested-cfgs" / CONFIG / "trace.config"
    if not (config / "gpgpusim.config").is_file() or not trace_config.is_file():
        return SmokeResult(False, f"the build has no {CONFIG} config", 0.0)
    lib_dir = layout.lib_dir_of(accelsim)
    if lib_dir is None:
        return SmokeResult(False, f"the build has no libcudart.so under {accelsim / layout.LIB_ROOT}", 0.0)
    with tempfile.TemporaryDirectory(prefix="cascade-smoke-") as scratch:
        run_dir = Path(scratch)
        for item in config.iterdir():
            if item.is_file():
                shutil.copyfile(item, run_dir / item.name)
        shutil.copyfile(trace_config, run_dir / "trace.config")
        argv = [
            str(accelsim / layout.BINARY),
            "-trace",
            str(TRACE / "kernelslist.g"),
            "-config",
            "./gpgpusim.config",
            "-config",
            "./trace.config",
        ]
        try:
            result = subprocess.run(
                argv,
                cwd=run_dir,
                env=layout.with_library_dir(env, lib_dir),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return SmokeResult(False, f"no result within {timeout:.0f} s", time.monotonic() - started)
        except OSError as exc:
            return SmokeResult(
                False, f"cannot run {argv[0]}: {exc.strerror or exc}", time.monotonic() - started
            )
    passed, detail = check_output(result.returncode, result.stdout + result.stderr)
    return SmokeResult(passed, detail, time.monotonic() - started)
