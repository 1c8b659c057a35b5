"""Issue 32 with the real simulator: a shard whose range ended just before a `MemcpyHtoD` line
failed in Accel-Sim's cleanup (`accel-sim.cc: ... cleanup(unsigned int): Assertion 'k' failed`).
A small trace of real kernels (four of the demo trace's, traced on a V100) with real `MemcpyHtoD`
lines (the demo trace's own) before, between and after them: at every split point, each shard's
list as the worker writes it (`kernel_list.TraceList`) runs to the simulator's exit line. The
same cut keeping the memcpy that follows its last kernel (the rule before) still aborts, so the
test meets the condition that failed."""

from __future__ import annotations

import gzip
import re
import subprocess
from pathlib import Path

import pytest

from cascade_core import simulator_layout as layout
from cascade_worker import accelsim
from cascade_worker.environment import simulator_environment
from cascade_worker.kernel_list import TraceList
from tests.accelsim_build import PREFIX, plain_env
from tests.helpers import REPO

pytestmark = [pytest.mark.accelsim, pytest.mark.timeout(900)]

DEMO = REPO / "samples" / "accelsim-traces" / "tinyformer-step-sm70" / "traces"
CONFIG = "SM7_QV100"
KERNELS = [1, 4, 9, 14]  # the demo trace's smallest kernels: a second or two each
_CYCLE = re.compile(r"^gpu_sim_cycle = (\d+)\s*$", re.MULTILINE)


def built_accelsim() -> Path:
    """The Accel-Sim tree of a finished build under CASCADE_TEST_ACCELSIM_PREFIX (never built here)."""
    if not PREFIX:
        pytest.skip("no real Accel-Sim build: set CASCADE_TEST_ACCELSIM_PREFIX (.ci/run does)")
    builds = sorted(b for b in (Path(PREFIX) / "builds").glob("*") if layout.is_complete(b))
    if not builds:
        pytest.skip(f"{PREFIX} has no finished build")
    return layout.accelsim_dir(builds[0])


def memcpy_trace(root: Path) -> Path:
    """A trace directory of KERNELS with the demo list's MemcpyHtoD lines around them."""
    memcpys = [
        line for line in (DEMO / "kernelslist.g").read_text().splitlines() if line.startswith("MemcpyHtoD")
    ]
    assert len(memcpys) >= 7
    traces = root / "traces"
    traces.mkdir(parents=True)
    for number in KERNELS:
        name = f"kernel-{number}.traceg"
        (traces / name).write_bytes(gzip.decompress((DEMO / f"{name}.gz").read_bytes()))
    lines = [
        memcpys[0],
        memcpys[1],
        "kernel-1.traceg",
        memcpys[2],
        "kernel-4.traceg",
        memcpys[3],
        memcpys[4],
        "kernel-9.traceg",
        memcpys[5],
        "kernel-14.traceg",
        memcpys[6],
    ]
    (traces / "kernelslist.g").write_text("\n".join(lines) + "\n")
    return root


def simulate(accelsim_dir: Path, trace_dir: Path, kernel_list: Path, run_dir: Path, home: Path):
    argv = accelsim.prepare(accelsim_dir, CONFIG, trace_dir, run_dir)
    argv[argv.index("-trace") + 1] = str(kernel_list)
    return subprocess.run(
        argv,
        cwd=run_dir,
        capture_output=True,
        text=True,
        timeout=600,
        env=simulator_environment(plain_env(home), layout.lib_dir_of(accelsim_dir)),
    )


def test_every_split_point_of_a_trace_with_memcpys_between_kernels_simulates(tmp_path: Path):
    accelsim_dir = built_accelsim()
    trace_dir = memcpy_trace(tmp_path / "trace")
    trace_list = TraceList(trace_dir / "traces" / "kernelslist.g")
    n = len(trace_list)
    # Each split point (a shard ends after kernel `cut`, the next starts after 1 warm-up kernel),
    # and the whole trace: the distinct ranges the shards simulate.
    ranges = {(0, n - 1)}
    for cut in range(n - 1):
        ranges |= {(0, cut), (max(0, cut), n - 1)}
    for first, last in sorted(ranges):
        name = f"{first}-{last}"
        kernel_list = trace_list.write(range(first, last + 1), tmp_path / "lists" / name, "kernelslist.g")
        assert kernel_list.read_text().splitlines()[-1] == trace_list.names[last]  # ends at its last kernel
        done = simulate(accelsim_dir, trace_dir, kernel_list, tmp_path / "runs" / name, tmp_path / "home")
        out = done.stdout
        assert done.returncode == 0 and "GPGPU-Sim: *** exit detected ***" in out, (name, out[-2000:])
        assert len(_CYCLE.findall(out)) == last - first + 1, name

    # The rule before: the first shard's list kept the memcpy after its last kernel, and aborted.
    naive = tmp_path / "lists" / "naive"
    naive.mkdir()
    kept = trace_list.write([0], naive, "kernelslist.g").read_text() + trace_list.lines[3] + "\n"
    assert kept.splitlines()[-1].startswith("MemcpyHtoD")
    (naive / "kernelslist.g").write_text(kept)
    done = simulate(
        accelsim_dir, trace_dir, naive / "kernelslist.g", tmp_path / "runs" / "naive", tmp_path / "home"
    )
    assert done.returncode != 0 and "Assertion" in done.stdout + done.stderr, (
        done.stdout[-2000:],
        done.stderr[-2000:],
    )
