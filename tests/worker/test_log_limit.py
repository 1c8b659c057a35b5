"""Issue 32, item 2, the pure parts: a sim's log within its limit (cascade_core.log_budget), the
worker's line splitter that cuts a line without end, and what a sim leaves of its scratch.
(`-gpgpu_runtime_stat 1:15` wrote 818 MB of scratch in two minutes, and left it all in /tmp.)"""

from __future__ import annotations

import pytest

from cascade_core.log_budget import MAX_FAILURE_LINES, LogBudget
from cascade_server.ingest.parser.accelsim_log import LogParser
from cascade_worker.chunks import LineSplitter
from cascade_worker.scratch import leave_scratch
from tests.helpers import recorded_log

NOTE = "[cascade] the log passed its limit"
# What `-gpgpu_runtime_stat 1:15` prints every cycle (DRAM and cache utilisation, ...).
PERIODIC = [
    "DRAM[0]: 16 bks, busW=4 BL=8 CL=12, tRRD=4 tCCD=2, tRCD=12 tRAS=28 tRP=12 tRC=40",
    "n_cmd=1234 n_nop=5678 n_act=12 n_pre=11 n_ref_event=0 n_req=34 n_rd=30 n_write=4 bw_util=0.01",
    "GPGPU-Sim uArch: cycles simulated: 2000  inst.: 46080 (ipc=23.0) sim_rate=46080 (inst/sec)",
]


def flooded(log: list[str], per_kernel: int) -> list[str]:
    """The recorded log with `per_kernel` periodic lines after each launch line (while kernels run)."""
    out = []
    for line in log:
        out.append(line)
        if line.startswith("launching kernel name: "):
            out += [PERIODIC[n % len(PERIODIC)] for n in range(per_kernel)]
    return out


def parse(lines: list[str]) -> list[tuple]:
    parser = LogParser(1132.0)
    kernels = parser.feed(lines)
    return [(k.kernel_name, k.gpu_sim_cycle, repr(k.stats)) for k in kernels]  # (NaN != NaN)


def by_chunks(budget: LogBudget, lines: list[str], size: int = 1000) -> list[str]:
    kept: list[str] = []
    for start in range(0, len(lines), size):
        kept += budget.admit_lines(lines[start : start + size])
    return kept


def test_past_the_limit_the_log_keeps_its_kernels_and_stats_and_leaves_out_the_rest():
    log = recorded_log("SM7_QV100")
    flood = flooded(log, 20_000)
    budget = LogBudget(200_000, NOTE)
    kept = by_chunks(budget, flood)
    assert parse(kept) == parse(log)  # every kernel, with every stat
    assert [line for line in kept if line.startswith("launching kernel name: ")] == [
        line for line in log if line.startswith("launching kernel name: ")
    ]
    assert kept.count(NOTE) == 1 and "GPGPU-Sim: *** exit detected ***" in kept
    left_out = len(flood) - (len(kept) - 1)
    assert budget.dropped_lines == left_out and left_out > 5 * 20_000
    assert budget.dropped_chars == sum(len(x) + 1 for x in flood) - sum(len(x) + 1 for x in kept if x != NOTE)
    assert budget.summary().startswith(f"{left_out:,} lines (")
    # The first 200,000 characters are the log as it came; past them, only what the log keeps.
    head = kept[: kept.index(NOTE)]
    assert head == flood[: len(head)] and sum(len(x) + 1 for x in head) <= 200_000


def test_within_the_limit_nothing_is_left_out_and_no_limit_keeps_all():
    log = flooded(recorded_log("SM7_QV100"), 100)
    for limit in (0, 10**9):
        budget = LogBudget(limit, NOTE)
        assert by_chunks(budget, log) == log and budget.summary() is None


def test_text_and_lines_give_the_same_log():
    flood = flooded(recorded_log("SM7_QV100"), 2000)
    as_lines = by_chunks(LogBudget(50_000, NOTE), flood)
    budget = LogBudget(50_000, NOTE)
    as_text = "".join(
        budget.admit("".join(x + "\n" for x in flood[i : i + 700])) for i in range(0, len(flood), 700)
    )
    assert as_text == "".join(x + "\n" for x in as_lines)


def test_the_simulator_s_own_failure_lines_are_kept_but_only_a_few():
    budget = LogBudget(10, NOTE)
    lines = ["x" * 20, *["GPGPU-Sim uArch: ERROR ** deadlock detected"] * (MAX_FAILURE_LINES + 50), "noise"]
    kept = budget.admit_lines(lines)
    assert kept.count("GPGPU-Sim uArch: ERROR ** deadlock detected") == MAX_FAILURE_LINES


def test_cascade_lines_the_simulator_prints_are_not_the_worker_s():
    """The worker tells its notes from the simulator's output; the server cannot (it keeps them)."""
    worker = LogBudget(10, NOTE, notes_trusted=False)
    assert worker.admit_lines(["x" * 20, "[cascade] kernel 1 failed in the simulator: fake"]) == [NOTE]
    assert worker.admit_lines(["[cascade] restart 1: kernels 2-3 of the trace"], own=True) == [
        "[cascade] restart 1: kernels 2-3 of the trace"
    ]
    server = LogBudget(10, NOTE)
    assert server.admit("x" * 20 + "\n[cascade] kernel 1 failed in the simulator: x\n") == (
        "[cascade] the log passed its limit\n[cascade] kernel 1 failed in the simulator: x\n"
    )


def test_a_block_that_never_ends_is_no_block_past_its_size():
    budget = LogBudget(10, NOTE)
    kept = budget.admit_lines(["x" * 20, "kernel_name = k", *["y = 1" * 1000] * 1500])
    assert len(kept) < 900 and kept[:2] == [NOTE, "kernel_name = k"]


def test_a_line_without_end_is_cut_and_the_rest_of_it_left_out():
    splitter = LineSplitter(max_line=16)
    lines = splitter.feed(b"short\n" + b"x" * 40)
    lines += splitter.feed(b"y" * 1000)
    lines += splitter.feed(b"z\nnext\n")
    assert lines == ["short", "x" * 16 + " [cascade: line cut at 16 bytes]", "next"]
    assert splitter.finish() == []


@pytest.fixture
def scratch(tmp_path):
    root = tmp_path / "cascade-sim-1-abc"
    for path in ("run/gpgpusim.config", "spool/000000000007.chunk.json", "kernel-list/kernelslist.g"):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("x")
    (root / "accelsim.log").write_text("the whole log\n")
    return root


def test_a_finished_or_cancelled_sim_leaves_no_scratch(scratch):
    leave_scratch(scratch, scratch / "accelsim.log", keep=False, unsent=0, wanted=True)
    assert not scratch.exists()


def test_a_cancelled_sim_leaves_nothing_even_unsent(scratch):
    """The server no longer wants it: before, its unsent spool stayed (818 MB in /tmp)."""
    leave_scratch(scratch, scratch / "accelsim.log", keep=False, unsent=7, wanted=False)
    assert not scratch.exists()


def test_a_log_the_server_still_wants_but_never_got_stays_as_the_log_alone(scratch):
    leave_scratch(scratch, scratch / "accelsim.log", keep=False, unsent=7, wanted=True)
    assert [p.name for p in scratch.iterdir()] == ["accelsim.log"]


def test_keep_scratch_keeps_it_all(scratch):
    leave_scratch(scratch, scratch / "accelsim.log", keep=True, unsent=7, wanted=False)
    assert {p.name for p in scratch.iterdir()} == {"run", "spool", "kernel-list", "accelsim.log"}
