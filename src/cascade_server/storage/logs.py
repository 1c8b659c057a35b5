"""Sim logs as stored: numbered chunks, the parser's saved state and what it found.

Storage only: which chunks to parse, parsing and the live events are the ingest service's
(cascade_server/ingest/). Every method but `iter_log` runs inside the caller's write, so a
chunk, the kernels it completed and the parser state after it commit together.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any

import aiosqlite

from .codecs import DECOMPRESS_ERRORS, chunk_text, decode_text, decompress, encode_text
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
STATE_COLUMNS = ("parser_state", "parser_state_seq")
_INSERT_CHUNK = "INSERT INTO log_chunks(sim_id, seq, data) VALUES (?,?,?)"


class LogRepository:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def sim_rows(
        self, tx: Transaction, sim_ids: Sequence[str]
    ) -> tuple[dict[str, aiosqlite.Row], set[tuple[str, int]]]:
        """The `sims` rows of `sim_ids` that exist, by id, and (sim_id, seq) of their chunks
        stored earlier that still wait for a gap to fill: one statement, as ingest asks for both
        with every group (each statement is a round trip to SQLite's thread)."""
        marks = ",".join("?" * len(sim_ids))
        rows = await tx.conn.execute_fetchall(
            "SELECT sims.*, (SELECT group_concat(seq) FROM log_chunks"
            " WHERE log_chunks.sim_id = sims.id AND log_chunks.seq >= sims.next_seq) AS parked_seqs"
            f" FROM sims WHERE id IN ({marks})",
            list(sim_ids),
        )
        parked = {
            (row["id"], int(seq))
            for row in rows
            if row["parked_seqs"]
            for seq in row["parked_seqs"].split(",")
        }
        return {row["id"]: row for row in rows}, parked

    async def sims_with_parked_chunks(self) -> list[tuple[str, int]]:
        """The sims with chunks that wait for a gap to fill, with the chunk each waits for (each
        sim looked up by its own chunks' key, so a database of long logs is not scanned whole)."""
        async with self.db.r.execute(
            "SELECT id, next_seq FROM sims WHERE EXISTS"
            " (SELECT 1 FROM log_chunks WHERE log_chunks.sim_id = sims.id AND log_chunks.seq >= sims.next_seq)"
        ) as cur:
            return [(row[0], row[1]) for row in await cur.fetchall()]

    async def insert_chunks(self, tx: Transaction, chunks: Iterable[tuple[str, int, bytes]]) -> None:
        """(sim_id, seq, pack_text(text)) rows."""
        await tx.conn.executemany(_INSERT_CHUNK, list(chunks))

    async def stored_text(self, tx: Transaction, sim_id: str, seq: int) -> str:
        """A stored chunk's text (`chunk_text`); a chunk that cannot be read (a damaged page) is
        one line saying so."""
        [text] = await self.stored_texts(tx, sim_id, seq, seq + 1)
        return text

    async def stored_texts(self, tx: Transaction, sim_id: str, first: int, end: int) -> list[str]:
        """The texts of the sim's chunks `first` to `end - 1`, all stored, in order."""
        rows = await tx.conn.execute_fetchall(
            "SELECT seq, data FROM log_chunks WHERE sim_id=? AND seq>=? AND seq<? ORDER BY seq",
            (sim_id, first, end),
        )
        return [decode_text(_readable_text(seq, data)) for seq, data in rows]

    async def save_parsed(
        self,
        tx: Transaction,
        chunks: list[tuple[str, int, bytes]],
        kernels: list[tuple[Any, ...]],
        progress: list[tuple[Any, ...]],
        states: list[tuple[bytes, int, str]],
    ) -> None:
        """The write's last step, committed with it in one round trip: chunk rows (sim_id, seq,
        pack_text(text)), kernel rows (KERNEL_COLUMNS), each sim's progress (PROGRESS_COLUMNS,
        then its id) and the parser states saved (the packed state, the seq it stands before,
        the sim's id); a sim's progress and its state go in one UPDATE."""
        saved = {sim_id: (state, seq) for state, seq, sim_id in states}
        rows = [(*row[:-1], *saved.get(row[-1], (None, None)), row[-1]) for row in progress]
        sets = ", ".join(
            [f"{column}=?" for column in PROGRESS_COLUMNS]
            + [f"{column}=coalesce(?, {column})" for column in STATE_COLUMNS]  # None: not saved
        )

        def save(conn: sqlite3.Connection) -> None:
            conn.executemany(_INSERT_CHUNK, chunks)
            conn.executemany("INSERT OR REPLACE INTO kernels VALUES (?,?,?,?,?,?,?,?,?)", kernels)
            conn.executemany(f"UPDATE sims SET {sets} WHERE id=?", rows)

        await tx.run(save, commit=True)

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
            # A chunk that cannot be read (a damaged page) is a line saying so, not the end of
            # the download.
            yield b"".join(_readable_text(seq, data) for seq, data in rows)
            last = rows[-1][0]


def _readable_text(seq: int, data: bytes) -> bytes:
    """A stored chunk's text, encoded (`encode_text`)."""
    try:
        return decompress(data)
    except DECOMPRESS_ERRORS:
        return encode_text(
            chunk_text([f"[cascade] log chunk {seq} is damaged in storage: lines are missing here"])
        )
