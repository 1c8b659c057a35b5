"""Issue 30: a log that goes on past failed kernels, as the server parses it.

The log is built from the real recorded SM7_QV100 log (15 kernels): a first simulator that
finishes kernels 1-3 and dies in the middle of kernel 4's stats, the worker's failure and restart
notes, and a restarted simulator that runs kernel 3 as warm-up and then kernels 5-15. Every
kernel lands at its trace position with the recording's numbers, kernel 4 is a failed row with
the simulator's reason, and no kernel is counted twice, however the log is cut into chunks and
wherever the parser is rebuilt from its saved state."""

from __future__ import annotations

import gzip
import json
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cascade_core import log_notes
from cascade_server.ingest.parser.accelsim_log import LogParser, ParsedKernel
from cascade_server.ingest.parsing import ParseJob, Parsers
from cascade_server.ingest.shard_placement import ShardPlacement
from cascade_worker.replay_shard import select_kernels
from tests.helpers import RECORDINGS

CLOCK = 1132.0
REASON = "shader.cc:3812: void barrier_set_t::deallocate_barrier(unsigned int): Assertion `x' failed."


def recorded() -> list[str]:
    text = gzip.decompress((RECORDINGS / "SM7_QV100.log.gz").read_bytes()).decode()
    return text.split("\n")[:-1]


def cycles_of(lines: list[str]) -> list[int]:
    return [int(line.split("=")[1]) for line in lines if line.startswith("gpu_sim_cycle = ")]


def close_at(lines: list[str]) -> int:
    """Where a simulator's closing lines start (after its last stats block)."""
    return max(i for i, line in enumerate(lines) if line.startswith("gpgpu_silicon_slowdown = ")) + 1


def segmented_log(first_start: int = 0, restart_warmup: tuple[int, ...] = (2,)) -> list[str]:
    lines = recorded()
    first = select_kernels(lines, first_start, 3)
    cut = close_at(select_kernels(lines, first_start, 2))
    block_start = first.index(next(x for x in first[cut:] if x.startswith("kernel_name = ")), cut)
    dying = first[: block_start + 12] + ["accel-sim.out: " + REASON]  # mid-block
    failure = log_notes.KernelFailure(3, REASON, "_Z4kernel4")
    restart = log_notes.Restart(1, tuple(range(4, 15)), restart_warmup)
    return [*dying, log_notes.failure_line(failure), log_notes.restart_line(restart), *run_of(restart_warmup)]


def run_of(warmup: tuple[int, ...]) -> list[str]:
    """A restarted simulator's output: its warm-up kernels, then kernels 5-15 (0-based 4-14)."""
    lines = recorded()
    rest = select_kernels(lines, 4, 14)
    echo = next(i for i, line in enumerate(rest) if line.startswith("Processing kernel "))
    blocks = []
    for position in warmup:
        one = select_kernels(lines, position, position)
        blocks += one[echo : close_at(one)]
    return renumbered([*rest[:echo], *blocks, *rest[echo:]])


def renumbered(lines: list[str]) -> list[str]:
    """As a simulator of its own list numbers its kernels: 1, 2, ... in the list's order."""
    out, uid = [], 0
    for line in lines:
        if line.startswith("launching kernel name: "):
            uid += 1
            line = re.sub(r" uid: \d+", f" uid: {uid}", line)
        elif line.startswith("kernel_launch_uid = "):
            line = f"kernel_launch_uid = {uid} "
        out.append(line)
    return out


EXPECTED_CYCLES = cycles_of(recorded())  # the recording's kernels, in trace order


def check(kernels: list[ParsedKernel]) -> None:
    rows = {k.kernel_index: k for k in kernels}
    # each kernel's launch number in the whole trace, as a sim that never restarted reports it
    assert all(k.kernel_launch_uid == k.kernel_index + 1 for k in kernels if k.failed is None)
    assert len(rows) == len(kernels) == 15  # nothing twice, nothing missing
    assert rows[3].failed == REASON and rows[3].kernel_name == "_Z4kernel4" and rows[3].gpu_sim_cycle is None
    simulated = {i: k.gpu_sim_cycle for i, k in rows.items() if k.failed is None}
    assert simulated == {i: c for i, c in enumerate(EXPECTED_CYCLES) if i != 3}


def test_each_kernel_at_its_position_the_failed_one_with_its_reason():
    parser = LogParser(CLOCK)
    kernels = parser.feed(segmented_log())
    check(kernels)
    assert (parser.kernels_done, parser.kernels_dropped, parser.kernels_placed, parser.kernels_failed) == (
        3 + 1 + 11,
        1,
        11,
        1,
    )
    assert not parser.in_block
    # the sim's totals are its own kernels', every simulator's, the restart's warm-up left out
    own = [k for k in kernels if k.failed is None]
    assert parser.latest["gpu_tot_sim_cycle"] == sum(k.gpu_sim_cycle or 0 for k in own)
    assert parser.latest["gpu_tot_sim_insn"] == sum(k.gpu_sim_insn or 0 for k in own)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cuts=st.lists(st.integers(min_value=1, max_value=60_000), max_size=12), data=st.data())
def test_any_chunking_and_any_rebuild_from_a_saved_state_give_the_same_rows(cuts, data):
    lines = segmented_log()
    bounds = sorted({c % len(lines) for c in cuts} | {0, len(lines)})
    parser = LogParser(CLOCK)
    kernels: list[ParsedKernel] = []
    for start, end in zip(bounds, bounds[1:]):
        if data.draw(st.booleans()):  # a restarted server: the parser from its saved state
            parser = LogParser(CLOCK, state=json.loads(json.dumps(parser.state())))
        kernels += parser.feed(lines[start:end])
    check(kernels)


def test_the_sims_progress_counts_its_own_kernels_simulated_or_failed():
    """Through the parse workers' code path: the shard placement applies to the first
    simulator only, and kernels_done counts each owned kernel once."""
    text = "".join(line + "\n" for line in segmented_log())
    job = ParseJob(
        sim_id="sim_a", next_seq=0, core_clock_mhz=CLOCK, saved_state=None, chunks=[text], watched=True
    )
    [result] = Parsers().parse([job])
    assert sorted(r.kernel_index for r in result.kernels) == list(range(15))
    assert [r.failed for r in result.kernels if r.failed] == [REASON]
    assert (result.progress.kernels_done, result.progress.kernels_failed) == (15, 1)
    live = [k for chunk in result.chunks for k in chunk.kernels]
    assert sorted(k.kernel_index for k in live) == list(range(15))


def test_a_shard_that_restarts_keeps_its_first_warm_up_out_and_its_range_whole():
    """A shard owning kernels 3-15 (0-based 2-14) after 2 warm-up kernels: its first simulator
    runs kernels 1-4 and dies in kernel 4; the restart runs kernel 3 as warm-up, then 5-15."""
    text = "".join(line + "\n" for line in segmented_log(first_start=0))
    job = ParseJob(
        sim_id="sim_s",
        next_seq=0,
        core_clock_mhz=CLOCK,
        saved_state=None,
        chunks=[text],
        watched=True,
        placement=ShardPlacement(first=2, warmup=2),
    )
    [result] = Parsers().parse([job])
    rows = {r.kernel_index: r for r in result.kernels}
    assert sorted(rows) == list(range(15))  # warm-up rows 0-1 are stored, as a shard's are
    assert rows[3].failed == REASON
    assert result.progress.kernels_done == 13 and result.progress.kernels_failed == 1  # 2-14
    live = sorted(k.kernel_index for chunk in result.chunks for k in chunk.kernels)
    assert live == list(range(2, 15))


def test_other_lines_of_the_worker_are_only_log_lines():
    parser = LogParser(CLOCK)
    lines = recorded()
    noted = [
        lines[0],
        "[cascade] shard 1 of 2: kernels 1-5 of the trace, with no warm-up",
        "[cascade] warm-up kernel 3 failed in the simulator: killed by SIGSEGV",
        *lines[1:],
    ]
    assert [k.gpu_sim_cycle for k in parser.feed(noted)] == EXPECTED_CYCLES
    assert parser.kernels_failed == 0


def test_forged_notes_past_the_sims_kernels_are_only_lines_and_cost_nothing():
    """A simulator (anything holding the sim's token) may send any line: a note naming kernels
    past the trace's is no note, whatever its numbers; nothing big is built for it."""
    import time

    parser = LogParser(CLOCK, kernel_limit=15)
    forged = [
        "[cascade] kernel #1000000000000000000 failed in the simulator: x; kernel name: K",
        "[cascade] kernel #99999999999999999999 failed in the simulator: x",
        "[cascade] kernel #15 failed in the simulator: x",
        "[cascade] restart 1: kernels #0-100000000 of the trace, after 0 warm-up kernels",
        "[cascade] restart 1: kernels #0-1000000000000000000000000000000 of the trace, after 0 warm-up kernels",
        "[cascade] restart 1: kernel #1000000000000000000 of the trace, after 0 warm-up kernels",
        "[cascade] restart 3: kernels #0-14, #0-14 of the trace, after 0 warm-up kernels",
    ]
    started = time.process_time()
    assert parser.feed(forged) == []
    assert time.process_time() - started < 1.0
    assert parser.kernels_failed == 0 and parser.kernels_noted == 0
    assert parser.log_tail[-len(forged) :] == forged  # kept as lines of the log


def test_a_kernel_named_again_and_again_counts_once_and_long_words_are_cut():
    parser = LogParser(CLOCK, kernel_limit=15)
    note = log_notes.failure_line(log_notes.KernelFailure(3, "x" * 50_000, "K" * 50_000))
    kernels = parser.feed([note] * 20)
    assert parser.kernels_failed == 1 and parser.kernels_noted == 1
    assert len(kernels[0].failed or "") <= log_notes.MAX_REASON_CHARS
    assert len(kernels[0].kernel_name) <= log_notes.MAX_NAME_CHARS
    forged = note.replace("x" * 400, "x" * 1_000_000)  # what the worker never writes: cut on reading
    [kernel] = LogParser(CLOCK, kernel_limit=15).feed([forged])
    assert len(kernel.failed or "") <= log_notes.MAX_REASON_CHARS
