"""Sim logs as stored: numbered chunks, the parser's saved state and what it found.

Storage only: which chunks to parse, parsing and the live events are the ingest service's
(cascade_server/ingest/). Every method but `iter_log` runs inside the caller's write, so a
chunk, the kernels it completed and the parser state after it commit together.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any

import aiosqlite

from .codecs import DECOMPRESS_ERRORS, decompress, unpack_lines
from .database import Database, Transaction

# The columns of a `kernels` row, in order (the ingest service builds rows in this order).
KERNEL_COLUMNS = (
    "sim_id",
    "kernel_index",
    "kernel_name",
    "kernel_launch_uid",
    "gpu_sim_cycle",
    "gpu_sim_insn",
    "gpu_ipc",
    "sim_time_ns",
    "stats",
)
# The columns of a sim's parse progress, in order, then the sim's id.
PROGRESS_COLUMNS = ("next_seq", "kernels_done", "current_kernel", "latest", "log_tail")


class LogRepository:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def sim_rows(self, tx: Transaction, sim_ids: Sequence[str]) -> dict[str, aiosqlite.Row]:
        """The `sims` rows of `sim_ids` that exist, by id."""
        marks = ",".join("?" * len(sim_ids))
        async with tx.conn.execute(f"SELECT * FROM sims WHERE id IN ({marks})", list(sim_ids)) as cur:
            return {row["id"]: row for row in await cur.fetchall()}

    async def parked(self, tx: Transaction, sim_ids: Sequence[str]) -> set[tuple[str, int]]:
        """(sim_id, seq) of the chunks stored earlier that still wait for a gap to fill."""
        marks = ",".join("?" * len(sim_ids))
        async with tx.conn.execute(
            f"SELECT log_chunks.sim_id, log_chunks.seq FROM log_chunks JOIN sims ON sims.id = log_chunks.sim_id"
            f" WHERE log_chunks.sim_id IN ({marks}) AND log_chunks.seq >= sims.next_seq",
            list(sim_ids),
        ) as cur:
            return {(sim_id, seq) for sim_id, seq in await cur.fetchall()}

    async def sims_with_parked_chunks(self) -> list[tuple[str, int]]:
        """The sims with chunks that wait for a gap to fill, with the chunk each waits for (each
        sim looked up by its own chunks' key, so a database of long logs is not scanned whole)."""
        async with self.db.r.execute(
            "SELECT id, next_seq FROM sims WHERE EXISTS"
            " (SELECT 1 FROM log_chunks WHERE log_chunks.sim_id = sims.id AND log_chunks.seq >= sims.next_seq)"
        ) as cur:
            return [(row[0], row[1]) for row in await cur.fetchall()]

    async def insert_chunks(self, tx: Transaction, chunks: Iterable[tuple[str, int, bytes]]) -> None:
        """(sim_id, seq, pack_lines(lines)) rows."""
        await tx.conn.executemany("INSERT INTO log_chunks(sim_id, seq, data) VALUES (?,?,?)", list(chunks))

    async def stored_chunk(self, tx: Transaction, sim_id: str, seq: int) -> list[str]:
        async with tx.conn.execute(
            "SELECT data FROM log_chunks WHERE sim_id=? AND seq=?", (sim_id, seq)
        ) as cur:
            row = await cur.fetchone()
        assert row is not None, "chunk listed as stored"
        return unpack_lines(row[0])

    async def stored_chunks(self, tx: Transaction, sim_id: str, first: int, end: int) -> list[list[str]]:
        """The sim's chunks `first` to `end - 1`, all stored, in order; a chunk that cannot be
        read (a damaged page) is one line saying so."""
        async with tx.conn.execute(
            "SELECT seq, data FROM log_chunks WHERE sim_id=? AND seq>=? AND seq<? ORDER BY seq",
            (sim_id, first, end),
        ) as cur:
            return [_readable_lines(seq, data) for seq, data in await cur.fetchall()]

    async def save_parsed(
        self,
        tx: Transaction,
        kernels: list[tuple[Any, ...]],
        progress: list[tuple[Any, ...]],
        states: list[tuple[bytes, int, str]],
    ) -> None:
        """Kernel rows (KERNEL_COLUMNS), each sim's progress (PROGRESS_COLUMNS, then its id) and
        the parser states saved (the packed state, the seq it stands before, the sim's id)."""
        if kernels:
            await tx.conn.executemany("INSERT OR REPLACE INTO kernels VALUES (?,?,?,?,?,?,?,?,?)", kernels)
        if progress:
            sets = ", ".join(f"{column}=?" for column in PROGRESS_COLUMNS)
            await tx.conn.executemany(f"UPDATE sims SET {sets} WHERE id=?", progress)
        if states:
            await tx.conn.executemany("UPDATE sims SET parser_state=?, parser_state_seq=? WHERE id=?", states)

    async def iter_log(self, sim_id: str, batch: int = 64) -> AsyncIterator[bytes]:
        """The sim's whole log in seq order, each line ending in a newline, a batch at a time."""
        last = -1
        while True:
            async with self.db.r.execute(
                "SELECT seq, data FROM log_chunks WHERE sim_id=? AND seq>? ORDER BY seq LIMIT ?",
                (sim_id, last, batch),
            ) as cur:
                rows = list(await cur.fetchall())
            if not rows:
                return
            yield b"".join(decompress(data) for _, data in rows)
            last = rows[-1][0]


def _readable_lines(seq: int, data: bytes) -> list[str]:
    try:
        return unpack_lines(data)
    except DECOMPRESS_ERRORS:
        return [f"[cascade] log chunk {seq} is damaged in storage: lines are missing here"]
