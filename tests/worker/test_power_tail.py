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
    assert not report.exists() and (tmp_path / "kept" / "0.log").read_text().count("kernel_launch_uid") == 2


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


def test_a_full_disk_loses_no_simulator_s_report(tmp_path, monkeypatch):
    """Each simulator's report is moved aside whole (no space needed); when they cannot be joined,
    each is uploaded as a file of its own."""
    import builtins

    tail = PowerTail(tmp_path, tmp_path / "kept")
    report = tmp_path / REPORT_NAME
    for simulator in range(2):
        tail.start()
        watch = KernelWatch([simulator], ["k"], 0.0)
        report.write_text(power_block(1, simulator + 1))
        finish(watch, 1)
        tail.end(watch, lambda p: True)
    real_open = builtins.open

    def full_disk(path, mode="r", *args, **kwargs):
        if "w" in mode:
            raise OSError(28, "No space left on device")
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", full_disk)
    tail.finish()
    monkeypatch.undo()
    assert report.read_text() == power_block(1, 1)
    assert (tmp_path / "accelwattch_power_report.restart-1.log").read_text() == power_block(1, 2)


def test_a_block_of_a_uid_the_list_does_not_have_is_not_kept(tmp_path):
    tail = PowerTail(tmp_path, tmp_path / "kept")
    watch = KernelWatch([0], ["k"], 0.0)
    (tmp_path / REPORT_NAME).write_text(power_block(0, 1) + power_block(999_999, 1))
    assert tail.poll(watch, lambda p: True) == [] and tail._waiting == {}


def test_a_launch_line_with_another_script_s_digits_is_read_past():
    """Accel-Sim prints a kernel's name from its trace header whole: a name holding ` uid: ²`
    stopped the output's reading (int("²") raises), and the sim hung (an attacker found it)."""
    watch = KernelWatch([0], ["k"], 0.0)
    watch.feed("launching kernel name: _Z1kv uid: ² x uid: 1 cuda_stream_id: 0", 0.0)
    watch.feed("kernel_launch_uid = ² ", 0.0)
    assert watch.running() is None
