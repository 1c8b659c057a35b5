"""Parsing with parsers rebuilt from the stored log (ingest/replay.py), alone: a job whose
parser is not kept reads the stored chunks again, REPLAY_BATCH at a time, from its saved state
or (a state that cannot be read) from the start, and comes to what one parse of the whole log
does; a parse worker that dies has the group parsed once more, and a second death is the
caller's."""

from __future__ import annotations

import dataclasses
from typing import cast

import pytest

from cascade_server.ingest import replay
from cascade_server.ingest.parse_pool import ParsePool, ParseWorkerDied
from cascade_server.ingest.parsing import ParseJob, ParseResult, Parsers
from cascade_server.ingest.replay import ReplayingParser
from cascade_server.storage import Transaction
from cascade_server.storage.codecs import chunk_text
from cascade_worker.replay import read_lines
from tests.helpers import RECORDINGS

RECORDED = read_lines(RECORDINGS / "SM7_QV100.log.gz")
CLOCK = 1132.0
CHUNKS = [chunk_text(RECORDED[start : start + 2000]) for start in range(0, len(RECORDED), 2000)]
TX = cast(Transaction, None)  # the stand-in log below needs none


class StoredLog:
    """The sim's chunks as stored, and which of them were read again."""

    def __init__(self) -> None:
        self.reads: list[tuple[int, int]] = []

    async def stored_texts(self, tx: Transaction, sim_id: str, first: int, end: int) -> list[str]:
        self.reads.append((first, end))
        return CHUNKS[first:end]


def whole_parse(upto: int) -> ParseResult:
    [result] = Parsers().parse([ParseJob("sim", 0, CLOCK, None, CHUNKS[:upto], False)])
    return result


def progress(result: ParseResult):
    return dataclasses.replace(result.progress, parser_state=None)


@pytest.mark.parametrize(
    ("saved_state", "state_seq", "reads"),
    [
        (None, 0, [(0, 2), (2, 4), (4, 5)]),  # a state that stands before chunk 0, behind
        (b"\x00 not a saved state", None, [(0, 2), (2, 4), (4, 5)]),  # damaged: from the start
    ],
    ids=["behind", "damaged"],
)
async def test_a_parser_not_kept_reads_the_stored_log_again_in_batches(
    monkeypatch, saved_state: bytes | None, state_seq: int | None, reads: list[tuple[int, int]]
) -> None:
    monkeypatch.setattr(replay, "REPLAY_BATCH", 2)
    log = StoredLog()
    parser = ReplayingParser(log)
    job = ParseJob("sim", 5, CLOCK, saved_state, CHUNKS[5:7], True, state_seq=state_seq)
    [result] = await parser.parse(TX, [job])
    assert log.reads == reads
    assert progress(result) == progress(whole_parse(7))
    before = len(whole_parse(5).kernels)
    assert result.kernels == whole_parse(7).kernels[before:] and result.kernels  # one ends in chunk 6


async def test_a_state_that_stands_where_the_job_does_needs_no_replay() -> None:
    [saved] = Parsers().parse([ParseJob("sim", 0, CLOCK, None, CHUNKS[:5], False, save_state=True)])
    log = StoredLog()
    job = ParseJob("sim", 5, CLOCK, saved.progress.parser_state, CHUNKS[5:7], False)
    [result] = await ReplayingParser(log).parse(TX, [job])
    assert log.reads == [] and progress(result) == progress(whole_parse(7))


class DyingPool:
    def __init__(self, deaths: int) -> None:
        self.deaths = deaths
        self.calls = 0

    async def parse(self, jobs: list[ParseJob]) -> list[ParseResult]:
        self.calls += 1
        if self.deaths:
            self.deaths -= 1
            raise ParseWorkerDied("a worker died")
        return Parsers().parse(jobs)


async def test_a_worker_death_has_the_group_parsed_again_and_a_second_one_is_the_callers() -> None:
    job = ParseJob("sim", 0, CLOCK, None, CHUNKS[:2], False)
    once = DyingPool(deaths=1)
    [result] = await ReplayingParser(StoredLog(), cast(ParsePool, once)).parse(TX, [job])
    assert once.calls == 2 and progress(result) == progress(whole_parse(2))
    twice = DyingPool(deaths=2)
    with pytest.raises(ParseWorkerDied):
        await ReplayingParser(StoredLog(), cast(ParsePool, twice)).parse(TX, [job])
    assert twice.calls == 2
