"""The parse workers (ingest/parse_pool.py): answers equal an in-process parse, a job whose
state is damaged or behind is sent back saying so and the worker goes on, and a worker killed mid-ingest fails only the group
in hand: the next group starts new workers, which rebuild their sims' parsers from the saved
states."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal

import pytest

from cascade_server.ingest.parse_pool import ParsePool, ParseWorkerDied
from cascade_server.ingest.parsing import ParseJob, Parsers, StateNeeded
from cascade_server.storage.codecs import chunk_text, unpack_state
from cascade_worker.replay import read_lines
from tests.helpers import RECORDINGS

RECORDED = read_lines(RECORDINGS / "SM7_QV100.log.gz")
CLOCK = 1132.0
CHUNK = 1000


def chunk(seq: int) -> str:
    return chunk_text(RECORDED[seq * CHUNK : (seq + 1) * CHUNK])


def jobs_at(seq: int, states: dict[str, bytes | None]) -> list[ParseJob]:
    return [
        ParseJob(sim_id, seq, CLOCK, state, [chunk(seq)], True, save_state=True)
        for sim_id, state in states.items()
    ]


def comparable(result) -> str:
    # Stats blobs are compressed pickles: compare what they hold, not their bytes; as text, since
    # the stats hold NaNs (never equal to themselves).
    state = unpack_state(result.progress.parser_state)
    return repr(
        (
            [dataclasses.replace(row, stats=b"") for row in result.kernels],
            dataclasses.replace(result.progress, parser_state=None),
            state,
            [(c.kernels, c.progress) for c in result.chunks],
        )
    )


@pytest.fixture
async def pool():
    pool = ParsePool(workers=2)  # a group shared between two workers
    pool.start()
    yield pool
    pool.close()


async def test_the_workers_answer_as_a_parse_in_this_process(pool) -> None:
    sims: dict[str, bytes | None] = {f"sim_{n}": None for n in range(5)}  # shared by the two workers
    here = Parsers()
    for seq in range(8):
        jobs = jobs_at(seq, sims)
        theirs = await pool.parse(jobs)
        ours = here.parse(jobs)
        assert [r.sim_id for r in theirs] == list(sims)
        assert [comparable(r) for r in theirs] == [comparable(r) for r in ours]
        sims = {r.sim_id: r.progress.parser_state for r in theirs}


async def test_a_job_whose_state_is_damaged_or_behind_is_sent_back_and_the_worker_goes_on(pool) -> None:
    bad = ParseJob("sim_bad", 3, CLOCK, b"\x28\xb5\x2f\xfd not a frame", [chunk(3)], False)
    with pytest.raises(StateNeeded) as refused:
        await pool.parse([bad])
    assert list(refused.value.damaged) == ["sim_bad"] and not refused.value.replay
    behind = ParseJob("sim_behind", 3, CLOCK, None, [chunk(3)], False, state_seq=1)
    with pytest.raises(StateNeeded) as refused:
        await pool.parse([behind])
    assert refused.value.replay == ["sim_behind"] and not refused.value.damaged
    [result] = await pool.parse(jobs_at(0, {"sim_ok": None}))
    assert result.progress.next_seq == 1


async def test_a_worker_killed_fails_its_group_and_the_next_group_gets_new_workers(pool) -> None:
    sims: dict[str, bytes | None] = {f"sim_{n}": None for n in range(4)}
    first = await pool.parse(jobs_at(0, sims))
    states = {r.sim_id: r.progress.parser_state for r in first}
    for worker in pool._workers:
        os.kill(worker.process.pid, signal.SIGKILL)
        worker.process.join(timeout=10)
    with pytest.raises(ParseWorkerDied):
        await pool.parse(jobs_at(1, states))
    # The failed group committed nothing: the same chunks again, from the saved states.
    again = await pool.parse(jobs_at(1, states))
    expected = Parsers().parse(
        [ParseJob(s, 1, CLOCK, st, [chunk(1)], True, save_state=True) for s, st in states.items()]
    )
    assert [comparable(r) for r in again] == [comparable(r) for r in expected]


async def test_a_parse_cancelled_mid_way_leaves_no_half_answer_for_the_next(pool) -> None:
    # Cancelled (a server stopping mid-group), a round trip leaves its socket mid-frame: the
    # next parse must not read the old answer as its own, so it gets new workers.
    sims: dict[str, bytes | None] = {f"sim_{n}": None for n in range(4)}
    first = await pool.parse(jobs_at(0, sims))
    states = {r.sim_id: r.progress.parser_state for r in first}
    whole_log = [chunk(seq) for seq in range(len(RECORDED) // CHUNK)]  # long to parse
    others = [ParseJob(f"other_{n}", 0, CLOCK, None, whole_log, False) for n in range(8)]  # on both
    parsing = asyncio.ensure_future(pool.parse(others))
    for _ in range(10_000):  # until every worker has its jobs: sent, not yet answered
        if all(w._streams and not w._streams[1].transport.get_write_buffer_size() for w in pool._workers):
            break
        await asyncio.sleep(0)
    assert not parsing.done()
    parsing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await parsing
    again = await pool.parse(jobs_at(1, states))
    expected = Parsers().parse(
        [ParseJob(s, 1, CLOCK, st, [chunk(1)], True, save_state=True) for s, st in states.items()]
    )
    assert [comparable(r) for r in again] == [comparable(r) for r in expected]
