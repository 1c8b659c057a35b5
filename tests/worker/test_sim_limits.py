"""Issue 32, item 1, the worker's pure part and the rlimits: which limit ended a simulator, that a
limit is never a kernel the simulator failed on, the CPU budget shared by a sim's simulators, the
default memory limit, and the limits as a simulator's process really gets them."""

from __future__ import annotations

import resource
import signal
import subprocess
import sys

import pytest

from cascade_worker import cli, host_limits
from cascade_worker.kernel_watch import KernelWatch
from cascade_worker.outcome import OutputMarkers, kernel_failure
from cascade_worker.segments import SegmentPlan
from cascade_worker.settings import Options
from cascade_worker.sim_limits import (
    MIN_DEFAULT_MEMORY_MB,
    SimLimits,
    default_memory_mb,
    limit_reached,
)
from cascade_worker.simulation import Simulation

LIMITS = SimLimits(memory_mb=9216, cpu_s=3600, file_mb=1024)
BAD_ALLOC = (
    "-trace               /t/kernelslist.gterminate called after throwing an instance of 'std::bad_alloc'",
    "  what():  std::bad_alloc",
)


def markers(*lines: str) -> OutputMarkers:
    found = OutputMarkers()
    for line in lines:
        found.feed(line)
    return found


def test_an_allocation_that_failed_is_the_memory_limit_with_its_value_and_setting():
    # as the real one under RLIMIT_AS: the stderr line lands in the middle of a buffered stdout line
    reason = limit_reached(-signal.SIGABRT, markers(*BAD_ALLOC), LIMITS, cpu_used=3.0)
    assert (
        reason == "memory limit reached: the simulator may use 9,216 MiB (CASCADE_SIM_MEMORY_LIMIT_MB=9216)"
    )


def test_running_out_of_memory_inside_a_kernel_is_no_kernel_s_failure():
    """It aborts (SIGABRT, a kernel failure's signal), but the next simulator would run out too."""
    out = markers("launching kernel name: _Z3fooi uid: 3 cuda_stream_id: 0", *BAD_ALLOC)
    assert kernel_failure(-signal.SIGABRT, out) is None
    plain_abort = markers("launching kernel name: _Z3fooi uid: 3 cuda_stream_id: 0")
    assert kernel_failure(-signal.SIGABRT, plain_abort) == "killed by SIGABRT"


@pytest.mark.parametrize(
    ("returncode", "cpu_used", "words"),
    [
        (-signal.SIGXCPU, 3600.2, "CPU time limit reached"),
        (-signal.SIGKILL, 3605.0, "CPU time limit reached"),  # it ignored SIGXCPU
        (128 + signal.SIGXCPU, 10.0, "CPU time limit reached"),
        (-signal.SIGXFSZ, 1.0, "file size limit reached"),
    ],
)
def test_each_limit_says_which_it_is(returncode, cpu_used, words):
    reason = limit_reached(returncode, markers("launching kernel name: k uid: 1"), LIMITS, cpu_used)
    assert reason is not None and reason.startswith(words)
    setting = "CASCADE_SIM_CPU_LIMIT_S=3600" if "CPU" in words else "CASCADE_SIM_FILE_LIMIT_MB=1024"
    assert setting in reason


def test_a_write_refused_as_too_large_is_the_file_limit():
    """A simulator that ignores SIGXFSZ (Python does) gets EFBIG instead."""
    out = markers("OSError: [Errno 27] File too large")
    assert limit_reached(1, out, LIMITS, 0.0) is not None


@pytest.mark.parametrize(
    ("returncode", "lines"),
    [
        (0, ("GPGPU-Sim: *** exit detected ***",)),
        (-signal.SIGSEGV, ("launching kernel name: k uid: 1",)),
        (-signal.SIGTERM, ()),
        (-signal.SIGKILL, ()),  # a kill from outside, with CPU time to spare
        (-signal.SIGXFSZ, ()),  # no file limit set: not ours to name
    ],
)
def test_other_endings_are_no_limit(returncode, lines):
    no_file_limit = SimLimits(memory_mb=9216, cpu_s=3600, file_mb=0)
    assert limit_reached(returncode, markers(*lines), no_file_limit, cpu_used=10.0) is None


def test_the_cpu_budget_is_the_sim_s_and_a_restarted_simulator_gets_what_is_left():
    assert LIMITS.cpu_left(0.0) == 3600
    assert LIMITS.cpu_left(3500.5) == 99.5
    assert LIMITS.cpu_left(4000) == 0
    assert SimLimits(cpu_s=0).cpu_left(50) is None


def test_a_limit_ends_the_sim_even_while_it_would_go_on_past_failed_kernels(tmp_path):
    plan = SegmentPlan(tuple(range(6)), warmup_kernels=1)
    simulation = Simulation(["accel-sim.out"], plan=None)
    simulation.plan, simulation.segment = plan, plan.start()
    watch = KernelWatch(list(range(6)), [f"kernel-{n}.traceg" for n in range(1, 7)], now=0.0)
    watch.feed("Processing kernel /t/traces/kernel-3.traceg", 1.0)
    reason = limit_reached(-signal.SIGABRT, markers(*BAD_ALLOC), LIMITS, 1.0)
    following = simulation.after_exit(-signal.SIGABRT, markers(*BAD_ALLOC), watch, limit=reason)
    assert following.outcome is not None and following.outcome.state == "failed"
    assert following.outcome.error == reason
    assert following.notes == [f"[cascade] the sim stops: {reason}"]
    assert plan.failed == []  # no kernel was blamed


def test_the_default_memory_limit_is_the_host_s_share():
    gib = 2**30
    assert default_memory_mb(24 * gib, 2) == 9216  # ¾ of 24 GiB over 2 sims
    assert default_memory_mb(24 * gib, 1) == 18432
    assert default_memory_mb(4 * gib, 64) == MIN_DEFAULT_MEMORY_MB  # never below what a sim needs
    assert default_memory_mb(None, 2) == MIN_DEFAULT_MEMORY_MB


def test_the_worker_takes_its_limits_from_its_settings(monkeypatch):
    monkeypatch.setattr(cli, "available_memory_bytes", lambda: 16 * 2**30)
    base = {"url": "http://x", "sim_id": "sim-1"}
    limits = cli.limits_of(Options(**base, local_slots=4))
    assert (limits.memory_mb, limits.cpu_s, limits.file_mb) == (3072, 86400, 1024)
    monkeypatch.setenv("CASCADE_SIM_MEMORY_LIMIT_MB", "0")
    monkeypatch.setenv("CASCADE_SIM_CPU_LIMIT_S", "60")
    monkeypatch.setenv("CASCADE_SIM_FILE_LIMIT_MB", "5")
    limits = cli.limits_of(Options(**base))
    assert (limits.memory_mb, limits.cpu_s, limits.file_mb) == (0, 60, 5)


def test_the_host_s_memory_is_known_here():
    memory = host_limits.available_memory_bytes()
    assert memory is not None and memory > 2**28


PRINT_LIMITS = (
    "import resource as r; print([r.getrlimit(x) for x in "
    "(r.RLIMIT_AS, r.RLIMIT_CPU, r.RLIMIT_FSIZE, r.RLIMIT_CORE)])"
)


def test_the_simulator_s_process_gets_the_limits_and_the_worker_keeps_its_own():
    before = [resource.getrlimit(x) for x in (resource.RLIMIT_AS, resource.RLIMIT_CPU)]
    done = subprocess.run(
        [sys.executable, "-c", PRINT_LIMITS],
        preexec_fn=host_limits.child_limits(SimLimits(memory_mb=2048, cpu_s=100, file_mb=8), 42.3),
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == str(
        [(2048 * 2**20, 2048 * 2**20), (43, 48), (8 * 2**20, 8 * 2**20), (0, 0)]
    )
    assert [resource.getrlimit(x) for x in (resource.RLIMIT_AS, resource.RLIMIT_CPU)] == before


def test_no_limit_set_leaves_only_core_files_off():
    done = subprocess.run(
        [sys.executable, "-c", PRINT_LIMITS],
        preexec_fn=host_limits.child_limits(SimLimits(), None),
        capture_output=True,
        text=True,
        check=True,
    )
    infinity = resource.RLIM_INFINITY
    as_limit, cpu, fsize, core = eval(done.stdout)  # noqa: S307 (our own child's repr of tuples)
    assert core == (0, 0) and as_limit == resource.getrlimit(resource.RLIMIT_AS)
    assert cpu == resource.getrlimit(resource.RLIMIT_CPU) and fsize[0] in (infinity, fsize[1])
