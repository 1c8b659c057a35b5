"""Which of a group's chunks are taken, and which are next (ingest/chunk_order.py), alone: the
404 and 409 rules (a `pending` sim's chunks are taken, issue 32), repeats, and the chunks in order
past what was parked."""

from __future__ import annotations

import asyncio

from cascade_server.domain_errors import Conflict, NotFound
from cascade_server.ingest.chunk_order import MAX_AHEAD, admit, next_in_order
from cascade_server.ingest.group_writer import PendingChunk

ROWS = {
    "running": {"state": "running", "next_seq": 2},
    "pending": {"state": "pending", "next_seq": 0},
}


def chunk(sim_id: str, seq: int, text: str = "") -> PendingChunk:
    return PendingChunk(sim_id, seq, text or f"{sim_id} {seq}\n", asyncio.get_running_loop().create_future())


def answer(pending: PendingChunk) -> BaseException | None:
    return pending.done.exception() if pending.done.done() else None


async def test_refused_chunks_are_answered_and_the_rest_taken_in_the_order_they_came() -> None:
    group = [
        chunk("running", 5),
        chunk("gone", 0),
        chunk("pending", 0),
        chunk("running", 2 + MAX_AHEAD),
        chunk("running", 1 + MAX_AHEAD),
        chunk("running", 2),
    ]
    fresh = admit(group, ROWS, set())
    assert {sim_id: list(chunks) for sim_id, chunks in fresh.items()} == {
        "running": [5, 1 + MAX_AHEAD, 2],
        "pending": [0],
    }
    assert [type(answer(p)) for p in group] == [
        type(None),
        NotFound,
        type(None),
        Conflict,
        type(None),
        type(None),
    ]
    assert str(answer(group[3])) == (
        f"seq {2 + MAX_AHEAD} is {MAX_AHEAD} chunks past seq 2, which this sim's log waits for; "
        f"at most {MAX_AHEAD - 1} may wait: send seq 2 first"
    )


async def test_a_repeat_is_left_out_unanswered_and_the_first_chunk_per_seq_wins() -> None:
    first, again, done_before, parked_before = (
        chunk("running", 3, "first\n"),
        chunk("running", 3, "again\n"),
        chunk("running", 1),
        chunk("running", 4),
    )
    fresh = admit([first, again, done_before, parked_before], ROWS, {("running", 4)})
    assert fresh == {"running": {3: first}}
    assert not any(p.done.done() for p in (again, done_before, parked_before))


async def test_the_next_chunks_are_fresh_or_parked_and_any_past_a_gap_wait() -> None:
    read: list[tuple[str, int]] = []

    async def read_parked(sim_id: str, seq: int) -> str:
        read.append((sim_id, seq))
        return f"parked {seq}\n"

    fresh = {2: chunk("a", 2), 3: chunk("a", 3)}
    parked = {("a", 4), ("a", 7), ("b", 9)}
    texts, waiting = await next_in_order("a", 2, fresh, parked, read_parked)
    assert texts == ["a 2\n", "a 3\n", "parked 4\n"] and waiting  # chunk 7 waits for 5 and 6
    assert read == [("a", 4)]
    texts, waiting = await next_in_order("a", 2, fresh, {("a", 4), ("b", 9)}, read_parked)
    assert len(texts) == 3 and not waiting  # another sim's parked chunks are its own
    texts, waiting = await next_in_order("a", 1, fresh, set(), read_parked)
    assert texts == [] and waiting  # chunk 1 is missing: 2 and 3 wait
