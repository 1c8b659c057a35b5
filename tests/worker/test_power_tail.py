"""The worker's reading of AccelWattch's report (power_tail.py), simulator after simulator: a
kernel's power is noted once its stats block passed, at its trace position; a warm-up kernel's
is dropped; a kernel without a whole block is named; the reports of every simulator become one."""

from __future__ import annotations

from cascade_core.power_report import REPORT_NAME
from cascade_worker.kernel_watch import KernelWatch
from cascade_worker.power_tail import PowerTail
from tests.worker.fakes.accel_sim_fake import kernel_block, power_block


def finish(watch: KernelWatch, uid: int) -> None:
    for line in kernel_block(uid):
        watch.feed(line, 0.0)


def test_power_waits_for_the_kernel_s_stats_and_goes_to_its_trace_position(tmp_path):
    tail = PowerTail(tmp_path, tmp_path / "kept")
    report = tmp_path / REPORT_NAME
    watch = KernelWatch([4, 5, 6], ["a", "b", "c"], 0.0)  # a restart: #4 is its warm-up kernel
    owns = {5, 6}.__contains__
    assert tail.poll(watch, owns) == []  # no report yet
    report.write_text(power_block(1, 5) + power_block(2, 6))
    assert tail.poll(watch, owns) == []  # neither kernel's stats have passed
    finish(watch, 1)
    finish(watch, 2)
    [note] = tail.poll(watch, owns)  # #4 is a warm-up kernel: its power is dropped
    assert note.startswith("[cascade] power #5: avg 60.25 W, max 70.25 W, min 55.25 W; RFP 6, ")
    assert tail.poll(watch, owns) == []  # once
    finish(watch, 3)  # its stats passed, its block never came (the simulator was killed)
    assert tail.end(watch, owns) == [
        "[cascade] no power for kernel #6: the power report has no whole block for it"
    ]
    assert not report.exists() and (tmp_path / "kept").read_text().count("kernel_launch_uid") == 2


def test_the_reports_of_every_simulator_are_uploaded_as_one(tmp_path):
    tail = PowerTail(tmp_path, tmp_path / "kept")
    report = tmp_path / REPORT_NAME
    for simulator, uid in enumerate((1, 1)):
        tail.start()
        watch = KernelWatch([simulator], ["k"], 0.0)
        report.write_text(power_block(uid, simulator + 1))
        finish(watch, uid)
        assert len(tail.end(watch, lambda p: True)) == 1
    tail.finish()
    assert report.read_text() == power_block(1, 1) + power_block(1, 2)


def test_a_simulator_that_wrote_no_report_says_so(tmp_path):
    tail = PowerTail(tmp_path, tmp_path / "kept")
    watch = KernelWatch([0, 1], ["a", "b"], 0.0)
    finish(watch, 1)
    finish(watch, 2)
    assert tail.end(watch, lambda p: True) == [
        "[cascade] no power for kernels #0-1: the simulator wrote no power report"
    ]
    tail.finish()
    assert not (tmp_path / REPORT_NAME).exists()
