"""The group writer (ingest/group_writer.py) alone, on a stand-in writer: chunks that come while
a group is written are the next group, and a group that fails for several sims is written again
one sim at a time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import cast

import pytest

from cascade_server.ingest.group_writer import GroupWriter, PendingChunk
from cascade_server.storage import Transaction


class StandInDb:
    """One write at a time, as the database's writer; `refuse` fails a write before its block."""

    def __init__(self) -> None:
        self.refuse: Exception | None = None
        self._lock = asyncio.Lock()

    @asynccontextmanager
    async def write(self) -> AsyncIterator[Transaction]:
        async with self._lock:
            if self.refuse is not None:
                raise self.refuse
            yield cast(Transaction, None)


def seqs(group: list[PendingChunk]) -> list[tuple[str, int]]:
    return [(p.sim_id, p.seq) for p in group]


async def until(condition) -> None:
    for _ in range(1_000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("never")


async def test_chunks_that_come_while_a_group_is_written_are_the_next_group() -> None:
    groups: list[list[tuple[str, int]]] = []
    release = asyncio.Event()

    async def write_group(tx: Transaction, group: list[PendingChunk]) -> None:
        groups.append(seqs(group))
        if len(groups) == 1:
            await release.wait()

    writer = GroupWriter(StandInDb(), write_group)
    first = [asyncio.ensure_future(writer.write(sim, 0, f"{sim}0\n")) for sim in "ab"]
    await until(lambda: groups)
    later = [asyncio.ensure_future(writer.write(sim, 1, f"{sim}1\n")) for sim in "ab"]
    await until(lambda: all(not task.done() for task in later))
    assert groups == [[("a", 0), ("b", 0)]] and not any(task.done() for task in first)
    release.set()
    assert await asyncio.gather(*first, *later) == [None] * 4
    assert groups == [[("a", 0), ("b", 0)], [("a", 1), ("b", 1)]]


async def test_a_group_that_fails_for_several_sims_is_written_again_one_sim_at_a_time() -> None:
    groups: list[list[tuple[str, int]]] = []

    async def write_group(tx: Transaction, group: list[PendingChunk]) -> None:
        groups.append(seqs(group))
        if any(p.text == "poison\n" for p in group):
            raise OverflowError("poison")

    writer = GroupWriter(StandInDb(), write_group)
    results = await asyncio.gather(
        writer.write("a", 0, "a0\n"),
        writer.write("bad", 0, "poison\n"),
        writer.write("b", 0, "b0\n"),
        writer.write("bad", 1, "fine\n"),
        return_exceptions=True,
    )
    assert [type(r).__name__ for r in results] == ["NoneType", "OverflowError", "NoneType", "OverflowError"]
    assert groups == [
        [("a", 0), ("bad", 0), ("b", 0), ("bad", 1)],
        [("a", 0)],
        [("bad", 0), ("bad", 1)],
        [("b", 0)],
    ]


async def test_a_failing_group_of_one_sim_fails_once_and_a_chunk_answered_keeps_its_answer() -> None:
    groups: list[list[tuple[str, int]]] = []

    async def write_group(tx: Transaction, group: list[PendingChunk]) -> None:
        groups.append(seqs(group))
        group[0].done.set_exception(LookupError("refused alone"))
        if len(group) > 2:
            raise OverflowError("the group")

    writer = GroupWriter(StandInDb(), write_group)
    results = await asyncio.gather(
        *(writer.write("a", seq, "x\n") for seq in range(3)), return_exceptions=True
    )
    assert [type(r).__name__ for r in results] == ["LookupError", "OverflowError", "OverflowError"]
    assert groups == [[("a", 0), ("a", 1), ("a", 2)]]
    # Answered in a group that commits: the others succeed.
    results = await asyncio.gather(
        *(writer.write("a", seq, "x\n") for seq in range(2)), return_exceptions=True
    )
    assert [type(r).__name__ for r in results] == ["LookupError", "NoneType"]


async def test_a_write_refused_before_it_took_the_queue_fails_the_chunks_waiting_and_no_more() -> None:
    db = StandInDb()
    written: list[list[tuple[str, int]]] = []

    async def write_group(tx: Transaction, group: list[PendingChunk]) -> None:
        written.append(seqs(group))

    writer = GroupWriter(db, write_group)
    db.refuse = OSError("read-only: the disk is full")
    with pytest.raises(OSError, match="read-only"):
        await writer.write("a", 0, "a0\n")
    db.refuse = None
    await writer.write("a", 0, "a0\n")
    assert written == [[("a", 0)]]
