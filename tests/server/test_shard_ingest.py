"""Issue 23 in the ingest path: a shard's kernels are placed at their trace positions by the
parse itself, in the parse worker process (ingest/parsing.py), its warm-up kernels stored but
neither a live event nor counted done; a sim of the whole trace is parsed as before."""

from __future__ import annotations

from cascade_server.ingest.parse_pool import ParsePool
from cascade_server.ingest.parsing import ParseJob, Parsers
from cascade_server.ingest.shard_placement import ShardPlacement
from cascade_server.storage.codecs import chunk_text
from cascade_worker.replay import read_lines
from cascade_worker.replay_shard import select_kernels
from tests.helpers import RECORDINGS

RECORDED = read_lines(RECORDINGS / "SM7_QV100.log.gz")
CLOCK = 1132.0


def shard_job(sim_id: str, first: int, last: int, warmup: int, watched: bool = True) -> ParseJob:
    lines = select_kernels(RECORDED, first - warmup, last)
    chunks = [chunk_text(lines[start : start + 4000]) for start in range(0, len(lines), 4000)]
    return ParseJob(sim_id, 0, CLOCK, None, chunks, watched, ShardPlacement(first, warmup))


def check(job: ParseJob, result, first: int, last: int, warmup: int) -> None:
    assert [row.kernel_index for row in result.kernels] == list(range(first - warmup, last + 1))
    live = [stat.kernel_index for chunk in result.chunks for stat in chunk.kernels]
    assert live == list(range(first, last + 1))  # warm-up kernels are the shard's own business
    assert result.chunks[-1].progress["kernels_done"] == last - first + 1
    assert result.progress.kernels_done == last - first + 1  # kernels_done, as stored


def test_a_shards_kernels_are_placed_and_its_warm_up_left_out_of_events_and_progress() -> None:
    job = shard_job("sim_b", 5, 9, 2)
    check(job, Parsers().parse([job])[0], 5, 9, 2)


def test_a_sim_of_the_whole_trace_is_parsed_as_before() -> None:
    job = ParseJob("sim_a", 0, CLOCK, None, [chunk_text(RECORDED)], True)
    result = Parsers().parse([job])[0]
    assert [row.kernel_index for row in result.kernels] == list(range(15))
    assert result.progress.kernels_done == 15


async def test_the_parse_workers_place_a_shards_kernels_too() -> None:
    pool = ParsePool(workers=2)  # a group shared between two workers
    pool.start()
    try:
        jobs = [
            shard_job("sim_first", 0, 4, 0),
            shard_job("sim_mid", 5, 9, 1),
            shard_job("sim_last", 10, 14, 1),
        ]
        results = await pool.parse(jobs)
    finally:
        pool.close()
    for job, result, (first, last, warmup) in zip(jobs, results, [(0, 4, 0), (5, 9, 1), (10, 14, 1)]):
        check(job, result, first, last, warmup)


def test_a_shard_whose_log_has_more_kernels_than_its_range_counts_only_its_range() -> None:
    """Issue 32: a shard of kernels 5-9 whose log goes on to kernel 14 read "10 of 5": the kernels
    past its range are stored at their positions, but they are not the shard's (no live event,
    never counted done)."""
    lines = select_kernels(RECORDED, 5, 14)
    job = ParseJob("sim_over", 0, CLOCK, None, [chunk_text(lines)], True, ShardPlacement(5, 0, 9))
    result = Parsers().parse([job])[0]
    assert [row.kernel_index for row in result.kernels] == list(range(5, 15))  # the log's, all stored
    assert [stat.kernel_index for chunk in result.chunks for stat in chunk.kernels] == list(range(5, 10))
    assert result.progress.kernels_done == 5
    assert max(chunk.progress["kernels_done"] for chunk in result.chunks) == 5
