"""Issue 30, the pure parts: which kernel a simulator failed on, what runs next, when to give
up, and the log notes the server reads it all back from."""

from __future__ import annotations

import signal

import pytest

from cascade_core import log_notes
from cascade_worker.kernel_watch import KernelWatch
from cascade_worker.outcome import OutputMarkers, kernel_failure
from cascade_worker.segments import MAX_FAILS_IN_A_ROW, MAX_SAME_FAILS_IN_A_ROW, Failed, Segment, SegmentPlan

ASSERTION = (
    "accel-sim.out: shader.cc:3812: void barrier_set_t::deallocate_barrier(unsigned int): "
    "Assertion `active.any() == false' failed."
)


def markers(*lines: str) -> OutputMarkers:
    found = OutputMarkers()
    for line in lines:
        found.feed(line)
    return found


# --- the simulator's own reason --------------------------------------------------------------


def test_an_assertion_is_its_whole_line_without_the_program():
    reason = kernel_failure(-signal.SIGABRT, markers("launching kernel name: k uid: 1", ASSERTION))
    assert reason == ASSERTION.removeprefix("accel-sim.out: ")


def test_a_deadlock_is_its_report_lines():
    lines = (
        "GPGPU-Sim uArch: ERROR ** deadlock detected: last writeback core 2 @ gpu_sim_cycle 100 (+ 0) (50000 cycles ago)",
        "GPGPU-Sim uArch: DEADLOCK  shader cores no longer committing instructions [core(# threads)]:",
        "GPGPU-Sim uArch: DEADLOCK  0(32)",
        "GPGPU-Sim uArch DEADLOCK:  memory partition 1 busy",
    )
    reason = kernel_failure(134, markers(*lines))
    assert reason is not None and reason.startswith("GPGPU-Sim uArch: ERROR ** deadlock detected")
    assert "no longer committing" in reason and reason.count("; ") == 2


@pytest.mark.parametrize(
    ("returncode", "expected"),
    [
        (-signal.SIGSEGV, "killed by SIGSEGV"),
        (128 + signal.SIGBUS, "killed by SIGBUS"),
        (1, "exited with status 1"),
        # from outside (cancel, launcher, scheduler) or a limit: no kernel's failure
        (-signal.SIGTERM, None),
        (-signal.SIGKILL, None),
        (128 + signal.SIGINT, None),
        (-signal.SIGXCPU, None),
    ],
)
def test_signals_raised_inside_the_simulator_are_kernel_failures_others_are_not(returncode, expected):
    assert kernel_failure(returncode, markers("launching kernel name: k uid: 1")) == expected


def test_success_and_an_unsupported_arch_are_no_kernel_failure():
    assert kernel_failure(0, markers("GPGPU-Sim: *** exit detected ***")) is None
    assert kernel_failure(0, markers("unsupported binary version: 90")) is None


# --- which kernel ----------------------------------------------------------------------------


def test_the_kernel_to_blame_is_the_earliest_begun_and_not_finished():
    watch = KernelWatch([5, 7, 8], ["kernel-6.traceg", "kernel-8.traceg", "kernel-9.traceg"], now=0.0)
    assert watch.running() is None
    watch.feed("Processing kernel /t/traces/kernel-6.traceg", 1.0)
    assert watch.running() == 5 and watch.last_progress == 0.0
    watch.feed("launching kernel name: _Z3fooi uid: 1 cuda_stream_id: 0", 2.0)
    watch.feed("kernel_launch_uid = 1 ", 2.5)
    assert watch.running() == 5  # its stats block is being printed: not finished until its end
    watch.feed("gpgpu_silicon_slowdown = 1500000x", 3.0)
    assert watch.running() is None and watch.finished_positions() == {5}
    watch.feed("Processing kernel /elsewhere/kernel-8.traceg", 4.0)
    assert watch.running() == 7 and watch.name_at(7) == ""  # not launched: the header gives it
    watch.feed("launching kernel name: _Z3barv uid: 2", 5.0)
    watch.feed("launching kernel name: _Z3bazv uid: 3 cuda_stream_id: 1", 6.0)
    watch.feed("kernel_launch_uid = 3", 6.5)  # another stream's kernel finished first
    watch.feed("gpgpu_silicon_slowdown = 15x", 7.0)
    assert watch.running() == 7 and watch.name_at(7) == "_Z3barv" and watch.last_progress == 7.0
    watch.feed("launching kernel name: x uid: 99", 8.0)  # not of this list: ignored
    assert watch.running() == 7


# --- what runs next ---------------------------------------------------------------------------


def test_a_failed_kernel_is_skipped_and_the_rest_runs_after_warm_up_kernels_that_did_not_fail():
    plan = SegmentPlan(tuple(range(9)), warmup_kernels=1)
    first = plan.start()
    assert first == Segment(0, tuple(range(9))) and first.positions == list(range(9))
    second = plan.after_failure(first, Failed(2, "assertion"), finished_owned=2)
    assert second == Segment(1, tuple(range(3, 9)), (1,))
    third = plan.after_failure(second, Failed(3, "assertion"), finished_owned=0)
    assert third == Segment(2, tuple(range(4, 9)), (1,))  # 2 and 3 failed: not warm-ups
    assert plan.after_failure(third, Failed(8, "deadlock"), finished_owned=4) is None  # the last one
    assert [f.position for f in plan.failed] == [2, 3, 8]
    assert (
        plan.error()
        == "3 of 9 kernels failed in the simulator: #2 (assertion), #3 (assertion), #8 (deadlock)"
    )


def test_a_shard_goes_on_within_its_own_range():
    plan = SegmentPlan(tuple(range(10, 15)), warmup_kernels=2)
    assert plan.start().positions == [8, 9, 10, 11, 12, 13, 14]
    nxt = plan.after_failure(plan.start(), Failed(11, "x"), finished_owned=1)
    assert nxt == Segment(1, (12, 13, 14), (9, 10))


def test_a_failed_warm_up_kernel_runs_the_range_again_without_it():
    plan = SegmentPlan(tuple(range(10, 15)), warmup_kernels=1)
    nxt = plan.after_failure(plan.start(), Failed(9, "x"), finished_owned=0)
    assert nxt == Segment(1, tuple(range(10, 15)), (8,))
    assert plan.failed == [] and plan.error() is None


def test_a_config_that_fails_every_kernel_stops_after_a_few_quick_failures():
    plan = SegmentPlan(tuple(range(100)), warmup_kernels=1)
    segment: Segment | str | None = plan.start()
    tries = 0
    while isinstance(segment, Segment):
        segment = plan.after_failure(segment, Failed(segment.owned[0], "killed by SIGSEGV"), finished_owned=0)
        tries += 1
    assert tries == MAX_FAILS_IN_A_ROW and isinstance(segment, str)
    assert "failed on the first kernel it ran 3 times in a row" in segment


def test_one_kernel_failing_first_again_and_again_is_a_repeated_kernel_not_a_broken_config():
    """A training step can start with its reduce kernel three times: failures on one kernel name
    stop the sim only after MAX_SAME_FAILS_IN_A_ROW, so the kernels after them still run."""
    plan = SegmentPlan(tuple(range(100)), warmup_kernels=1)
    segment: Segment | str | None = plan.start()
    for _ in range(3):
        assert isinstance(segment, Segment)
        segment = plan.after_failure(segment, Failed(segment.owned[0], "x", "_Z6reducev"), finished_owned=0)
    assert isinstance(segment, Segment) and segment.owned[0] == 3  # goes on
    tries = 3
    while isinstance(segment, Segment):
        segment = plan.after_failure(segment, Failed(segment.owned[0], "x", "_Z6reducev"), finished_owned=0)
        tries += 1
    assert tries == MAX_SAME_FAILS_IN_A_ROW and isinstance(segment, str)


def test_more_than_half_of_the_kernels_failing_stops_the_sim():
    plan = SegmentPlan(tuple(range(6)), warmup_kernels=0)
    segment: Segment | str | None = plan.start()
    for position in (1, 3, 5):  # each after one kernel that simulated
        assert isinstance(segment, Segment)
        segment = plan.after_failure(segment, Failed(position, "x"), finished_owned=1)
    assert segment is None  # 3 of 6 (the last one) is not more than half
    plan = SegmentPlan(tuple(range(5)), warmup_kernels=0)
    segment = plan.start()
    for position in (0, 2, 4):
        assert isinstance(segment, Segment)
        segment = plan.after_failure(segment, Failed(position, "x"), finished_owned=1)
    assert isinstance(segment, str) and "3 of 5 kernels failed" in segment


def test_no_kernel_is_ever_tried_twice():
    plan = SegmentPlan(tuple(range(31)), warmup_kernels=3)
    segment: Segment | str | None = plan.start()
    owned_runs: list[int] = []
    while isinstance(segment, Segment):
        owned_runs.append(segment.owned[0])
        failed = min(segment.owned[0] + 2, segment.owned[-1])
        segment = plan.after_failure(segment, Failed(failed, "x"), finished_owned=failed - segment.owned[0])
    assert owned_runs == sorted(set(owned_runs))


# --- the log notes ----------------------------------------------------------------------------


def test_the_notes_read_back_as_written():
    failure = log_notes.KernelFailure(6, ASSERTION + "\n  and more", "_ZN2at6native13reduce_kernelILi512E")
    line = log_notes.failure_line(failure)
    assert line.startswith("[cascade] kernel #6 failed in the simulator: accel-sim.out: shader.cc:3812")
    back = log_notes.parse_failure(line)
    assert back == log_notes.KernelFailure(6, ASSERTION + " and more", failure.kernel_name)
    odd = log_notes.KernelFailure(0, "a; kernel name: b", "operator()(int): x; kernel name: y")
    assert log_notes.parse_failure(log_notes.failure_line(odd)) == log_notes.KernelFailure(
        0, "a, kernel name: b", odd.kernel_name
    )
    restart = log_notes.Restart(2, tuple(range(7, 131)), (5,))
    line = log_notes.restart_line(restart)
    assert line == "[cascade] restart 2: kernels #7-130 of the trace, after 1 warm-up kernel (#5)"
    assert log_notes.parse_restart(line) == restart
    assert log_notes.parse_restart(
        "[cascade] restart 1: kernel #8 of the trace, after 0 warm-up kernels"
    ) == (log_notes.Restart(1, (8,)))
    sampled = log_notes.Restart(0, (0, 4, 8, 9), (3, 7))
    line = log_notes.restart_line(sampled)
    assert (
        line == "[cascade] simulator 1: kernels #0, #4, #8-9 of the trace, after 2 warm-up kernels (#3, #7)"
    )
    assert log_notes.parse_restart(line) == sampled and sampled.positions == [0, 3, 4, 7, 8, 9]
    # what the worker never writes is no note
    assert (
        log_notes.parse_restart("[cascade] restart 1: kernels #9-3 of the trace, after 0 warm-up kernels")
        is None
    )
    assert (
        log_notes.parse_restart("[cascade] restart 1: kernels #1 of the trace, after 2 warm-up kernels (#1)")
        is None
    )
    assert log_notes.parse_failure("[cascade] shard 1 of 2: kernels 1-5 of the trace") is None
    assert log_notes.parse_failure("[cascade] kernel 7 failed in the simulator: x") is None  # no #
    assert log_notes.parse_restart("kernel 7 failed in the simulator: x") is None


def test_a_sample_goes_on_past_a_failed_kernel_with_each_kernel_after_its_own_warm_up():
    plan = SegmentPlan((0, 5, 9, 20), warmup_kernels=1)
    first = plan.start()
    assert first.warmup == (4, 8, 19) and first.positions == [0, 4, 5, 8, 9, 19, 20]
    nxt = plan.after_failure(first, Failed(9, "x"), finished_owned=2)
    assert nxt == Segment(1, (20,), (19,))
    assert plan.after_failure(nxt, Failed(20, "x"), finished_owned=0) is None
    # a warm-up that failed before is never a warm-up again: the one before it stands in
    plan = SegmentPlan((10, 11), warmup_kernels=1)
    again = plan.after_failure(plan.start(), Failed(9, "x"), finished_owned=0)
    assert again == Segment(1, (10, 11), (8,))


def test_a_sampled_sims_log_says_where_its_kernels_go_from_the_start(tmp_path):
    from cascade_worker.kernel_list import TraceList
    from cascade_worker.simulation import Simulation

    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "kernelslist.g").write_text("".join(f"kernel-{n}.traceg\n" for n in range(1, 11)))
    plan = SegmentPlan((0, 4, 8, 9), warmup_kernels=1, sampled=True)
    simulation = Simulation(
        ["sim", "-trace", "x"], TraceList(traces / "kernelslist.g"), plan, tmp_path / "lists"
    )
    [note] = simulation.first_notes()
    assert (
        note == "[cascade] simulator 1: kernels #0, #4, #8-9 of the trace, after 2 warm-up kernels (#3, #7)"
    )
    written = (tmp_path / "lists" / "kernelslist.g").read_text().split()
    assert written == [
        "kernel-1.traceg",
        "kernel-4.traceg",
        "kernel-5.traceg",
        "kernel-8.traceg",
        "kernel-9.traceg",
        "kernel-10.traceg",
    ]
    ranged = Simulation(
        ["sim", "-trace", "x"], TraceList(traces / "kernelslist.g"), SegmentPlan((2, 3), 1), tmp_path / "l2"
    )
    assert ranged.first_notes() == []  # a range goes where its sim's shard columns say
