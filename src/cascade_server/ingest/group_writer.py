"""Chunks committed in groups: whatever arrives while a group is being written goes into the
next one, so many simulators cost one transaction, not one each. Each chunk's caller waits for
its group's commit. A group that fails for several sims is written again one sim at a time, so
one sim's bad chunk (a value SQLite cannot store, ...) fails only that sim's chunks.

What a group's write does is the caller's (`write_group`, log_ingest.py); it may answer some
chunks itself (a refused one), and the others are answered when the group commits or fails.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Protocol

from ..storage import Transaction


@dataclass(slots=True)
class PendingChunk:
    sim_id: str
    seq: int
    text: str  # chunk_text(lines): the chunk's one form in ingest, as the parse workers take it
    done: asyncio.Future[None]


WriteGroup = Callable[[Transaction, list[PendingChunk]], Awaitable[None]]


class Writer(Protocol):
    """The database's one writer (storage.Database)."""

    def write(self) -> AbstractAsyncContextManager[Transaction]: ...


class GroupWriter:
    def __init__(self, db: Writer, write_group: WriteGroup) -> None:
        self._db = db
        self._write_group = write_group
        self._queue: list[PendingChunk] = []
        self._writer: asyncio.Task[None] | None = None

    async def write(self, sim_id: str, seq: int, text: str) -> None:
        """Queue the chunk for the next group; returns once that group is committed (or raises
        what answered the chunk)."""
        done = asyncio.get_running_loop().create_future()
        self._queue.append(PendingChunk(sim_id, seq, text, done))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_groups())
        await done

    async def _write_groups(self) -> None:
        while self._queue:
            group: list[PendingChunk] = []
            try:
                async with self._db.write() as tx:
                    # Taken under the lock: chunks that came while it was waited for join in.
                    group, self._queue = self._queue, []
                    await self._write_group(tx, group)
            except Exception as exc:
                if not group:
                    # The write failed before it took the queue (a database open read-only on
                    # a full disk): the chunks waiting fail with it, or this loop would spin.
                    group, self._queue = self._queue, []
                by_sim = waiting_by_sim(group)
                if len(by_sim) == 1:
                    fail(group, exc)
                    continue
                # One sim's bad chunk (a value SQLite cannot store, ...) must not fail the other
                # sims' chunks that happened to share its transaction: each sim's again, alone.
                for chunks in by_sim.values():
                    await self._write_alone(chunks)
                continue
            except BaseException:
                fail(group, RuntimeError("cancelled"))
                raise
            succeed(group)

    async def _write_alone(self, group: list[PendingChunk]) -> None:
        try:
            async with self._db.write() as tx:
                await self._write_group(tx, group)
        except Exception as exc:
            fail(group, exc)
        except BaseException:
            fail(group, RuntimeError("cancelled"))
            raise
        else:
            succeed(group)


def waiting_by_sim(group: list[PendingChunk]) -> dict[str, list[PendingChunk]]:
    """The group's chunks that still wait for an answer, by sim."""
    by_sim: dict[str, list[PendingChunk]] = {}
    for pending in group:
        if not pending.done.done():
            by_sim.setdefault(pending.sim_id, []).append(pending)
    return by_sim


def fail(group: list[PendingChunk], exc: BaseException) -> None:
    for pending in group:
        if not pending.done.done():
            pending.done.set_exception(exc)


def succeed(group: list[PendingChunk]) -> None:
    for pending in group:
        if not pending.done.done():
            pending.done.set_result(None)
