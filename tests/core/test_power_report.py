"""AccelWattch's report read as it grows (cascade_core/power_report.py) and the worker's power
notes read back (cascade_core/log_notes.py): pure, on a real report from the pinned simulator's
own format (tests/worker/fakes writes the same blocks) and on what a garbled or cut file holds."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cascade_core import log_notes
from cascade_core.power_report import MAX_LINE, POWER_COMPONENTS, PowerReportReader, read_block
from tests.worker.fakes.accel_sim_fake import power_block

REPORT = (power_block(1, 1) + power_block(2, 7)).encode()


def test_whole_blocks_are_read_with_their_power_components_only():
    [first, second] = PowerReportReader().feed(REPORT)
    assert (first.uid, first.name, first.avg_w, first.max_w, first.min_w) == (
        1,
        "_Z6kernel1v",
        55.25,
        65.25,
        50.25,
    )
    assert first.components == {
        "RFP": 1.0,
        "DRAMP": 0.75,
        "IDLE_COREP": 20.0,
        "CONSTP": 32.25,
        "STATICP": 1.25,
    }
    assert "TOT_INST" not in first.components  # a performance counter, not power
    assert math.isclose(sum(first.components.values()), first.avg_w)
    assert second.uid == 2 and second.avg_w == 61.25


@given(st.lists(st.integers(min_value=1, max_value=len(REPORT)), max_size=20))
def test_any_split_of_the_bytes_gives_the_same_blocks(cuts):
    reader = PowerReportReader()
    points = sorted(set(cuts))
    blocks = []
    for start, end in zip([0, *points], [*points, len(REPORT)]):
        blocks += reader.feed(REPORT[start:end])
    assert blocks == PowerReportReader().feed(REPORT)


def test_a_block_is_read_only_once_its_last_line_came():
    reader = PowerReportReader()
    cut = REPORT.index(b"gpu_tot_min_power")
    assert reader.feed(REPORT[:cut]) == []
    assert [b.uid for b in reader.feed(REPORT[cut:])] == [1, 2]


def test_a_block_cut_off_by_the_next_one_is_dropped_and_the_next_is_read():
    one = power_block(1, 1)
    cut = one[: one.index("Kernel Maximum")]
    assert [b.uid for b in PowerReportReader().feed((cut + power_block(2, 2)).encode())] == [2]


@pytest.mark.parametrize(
    "bad",
    [
        "kernel_avg_power = -nan",
        "kernel_avg_power = inf",
        "kernel_avg_power = 1e999",
        "kernel_avg_power = 57.2x",
        "kernel_avg_power =",
    ],
)
def test_a_block_whose_figures_do_not_read_is_skipped_and_counted(bad):
    text = power_block(1, 1).replace("kernel_avg_power = 55.25", bad) + power_block(2, 2)
    reader = PowerReportReader()
    assert [b.uid for b in reader.feed(text.encode())] == [2]
    assert reader.skipped == 1


@pytest.mark.parametrize("uid", ["", "x", "-1", "1 2", "9" * 13])
def test_a_block_without_a_plain_uid_is_no_block(uid):
    lines = power_block(1, 1).replace("kernel_launch_uid = 1 ", f"kernel_launch_uid = {uid}").split("\n")
    assert read_block(lines) is None


def test_binary_junk_and_endless_lines_cost_nothing_and_break_nothing():
    reader = PowerReportReader()
    junk = b"\x00\xff" * (MAX_LINE * 3) + b"\n" + b"kernel_name = x\n" + b"y" * (MAX_LINE * 2)
    assert reader.feed(junk) == []
    assert [b.uid for b in reader.feed(b"\n" + REPORT)] == [1, 2]


def test_a_block_that_never_ends_is_dropped():
    reader = PowerReportReader()
    endless = ("kernel_name = x\n" + "gpu_avg_IBP, = 1\n" * 6_000).encode()
    assert reader.feed(endless) == [] and reader.skipped == 1
    assert [b.uid for b in reader.feed(REPORT)] == [1, 2]


def test_a_power_note_reads_back_as_written_and_leaves_out_zero_components():
    components = (("IBP", 0.00191644), ("ICP", 0.0), ("IDLE_COREP", 21.87))
    line = log_notes.power_line(log_notes.KernelPowerNote(6, 57.2549, 70.9738, 55.4988, components))
    assert line == (
        "[cascade] power #6: avg 57.2549 W, max 70.9738 W, min 55.4988 W; IBP 0.00191644, IDLE_COREP 21.87"
    )
    note = log_notes.parse_power(line)
    assert note == log_notes.KernelPowerNote(
        6, 57.2549, 70.9738, 55.4988, (("IBP", 0.00191644), ("IDLE_COREP", 21.87))
    )


@pytest.mark.parametrize(
    "line",
    [
        "[cascade] power #6: avg nan W, max 1 W, min 1 W",
        "[cascade] power #6: avg inf W, max 1 W, min 1 W",
        "[cascade] power #6: avg 1 W, max 1 W",
        "[cascade] power #99: avg 1 W, max 1 W, min 1 W",  # past the sim's 10 kernels
        "[cascade] power #" + "9" * 13 + ": avg 1 W, max 1 W, min 1 W",
        "power #6: avg 1 W, max 1 W, min 1 W",
    ],
)
def test_a_note_the_worker_never_writes_is_no_note(line):
    assert log_notes.parse_power(line, limit=10) is None


def test_a_note_s_odd_components_are_left_out_not_the_note():
    line = "[cascade] power #1: avg 1 W, max 2 W, min 0.5 W; DRAMP 0.5, bad name 1, X nan, " + "A 1, " * 100
    note = log_notes.parse_power(line)
    assert note is not None and note.avg_w == 1.0
    assert note.components[0] == ("DRAMP", 0.5) and len(note.components) <= log_notes.MAX_COMPONENTS


def test_the_components_are_accelwattch_s_own():
    assert len(POWER_COMPONENTS) == 33 and POWER_COMPONENTS[-2:] == ["CONSTP", "STATICP"]


@pytest.mark.parametrize("uid", ["²", "①", "١"])
def test_a_uid_in_another_script_s_digits_is_a_garbled_block_not_an_error(uid):
    """`"²".isdigit()` is true and `int("²")` raises: it stopped the worker's reading of the
    simulator's output, which then blocked on a full pipe for ever (an attacker found it)."""
    text = power_block(1, 1).replace("kernel_launch_uid = 1 ", f"kernel_launch_uid = {uid}") + power_block(
        2, 2
    )
    reader = PowerReportReader()
    assert [b.uid for b in reader.feed(text.encode())] == [2] and reader.skipped == 1


@pytest.mark.parametrize("figure", ["1e308", "100001", "-1", "1_000", "١٢", "0x10", "5W"])
def test_a_figure_no_simulator_writes_is_refused_in_the_report_and_in_a_note(figure):
    text = power_block(1, 1).replace("kernel_avg_power = 55.25", f"kernel_avg_power = {figure}")
    assert PowerReportReader().feed(text.encode()) == []
    note = f"[cascade] power #1: avg {figure} W, max 70 W, min 50 W"
    assert log_notes.parse_power(note) is None


def test_a_note_with_another_script_s_digits_or_too_long_is_no_note():
    assert log_notes.parse_power("[cascade] power #٦: avg 1 W, max 1 W, min 1 W") is None
    long = "[cascade] power #1: avg 1 W, max 1 W, min 1 W; " + "DRAMP 1, " * 1_000
    assert len(long) > log_notes.MAX_POWER_NOTE_CHARS and log_notes.parse_power(long) is None
    assert log_notes.parse_failure("[cascade] kernel #٦ failed in the simulator: x") is None
