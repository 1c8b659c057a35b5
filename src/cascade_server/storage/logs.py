"""Sim logs as stored: numbered chunks, the parser's saved state and what it found.

Storage only: which chunks to parse, parsing and the live events are the ingest service's
(cascade_server/ingest/). Every method but `iter_log` runs inside the caller's write, so a
chunk, the kernels it completed and the parser state after it commit together.

The rows ingest hands in are built here, next to the SQL that stores them: `chunk_row`,
`kernel_row` and `progress_row` (the parse workers build them, so each is a frozen dataclass
that pickles as its values).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any, Protocol

import aiosqlite

from cascade_core.log_notes import KernelPowerNote
from cascade_core.models import KernelPower, KernelPowerAt, SimMetrics

from .codecs import (
    DECOMPRESS_ERRORS,
    FRAME_HEADER_BYTES,
    chunk_text,
    content_size,
    decode_text,
    decompress,
    encode_text,
    pack_state,
    pack_stats,
    pack_text,
)
from .database import Database, Transaction


@dataclass(slots=True, frozen=True)
class ChunkRow:
    """A `log_chunks` row: a chunk as stored."""

    sim_id: str
    seq: int
    data: bytes  # pack_text(chunk_text(lines))

    def __reduce__(self) -> tuple[type[ChunkRow], tuple[Any, ...]]:
        return ChunkRow, _CHUNK_VALUES(self)


@dataclass(slots=True, frozen=True)
class KernelRow:
    """A `kernels` row: one kernel a sim's log completed."""

    sim_id: str
    kernel_index: int
    kernel_name: str
    kernel_launch_uid: int | None
    gpu_sim_cycle: int | None
    gpu_sim_insn: int | None
    gpu_ipc: float | None
    sim_time_ns: float | None
    stats: bytes  # pack_stats(stats)
    failed: str | None = None  # the simulator's reason, for a kernel it failed on (no results)
    estimated_from: int | None = None  # a sampled sim's kernel not simulated: its representative

    def __reduce__(self) -> tuple[type[KernelRow], tuple[Any, ...]]:
        return KernelRow, _KERNEL_VALUES(self)


@dataclass(slots=True, frozen=True)
class PowerRow:
    """A kernel's power (migration 13), as its `kernel_power` columns."""

    sim_id: str
    kernel_index: int
    avg_w: float
    max_w: float
    min_w: float
    components: str  # JSON {name: W}

    def event(self) -> KernelPowerAt:
        power = KernelPower(
            avg_w=self.avg_w, max_w=self.max_w, min_w=self.min_w, components=json.loads(self.components)
        )
        return KernelPowerAt(kernel_index=self.kernel_index, power=power)


def power_rows(
    sim_id: str,
    notes: Sequence[KernelPowerNote],
    estimates: Mapping[int, Sequence[tuple[int, float]]],
) -> list[PowerRow]:
    """The rows of the worker's power notes; a sampled sim's representative's power is also each
    kernel's that takes its numbers (`estimates`: representative -> (position, scale)). Power is
    not scaled: an estimated kernel is taken to draw what its representative draws."""
    rows = []
    for note in notes:
        components = json.dumps(dict(note.components))
        for index in (note.kernel_index, *(p for p, _ in estimates.get(note.kernel_index, ()))):
            rows.append(PowerRow(sim_id, index, note.avg_w, note.max_w, note.min_w, components))
    return rows


@dataclass(slots=True, frozen=True)
class ProgressRow:
    """A sim's parse progress, as its `sims` columns, and the parser's state when it was saved
    with it (it then stands before `next_seq`)."""

    sim_id: str
    next_seq: int  # the chunk the sim's log waits for
    kernels_done: int
    kernels_failed: int  # of kernels_done, those the simulator failed on
    current_kernel: str | None
    latest: str  # SimMetrics, as JSON
    log_tail: str  # a JSON list of lines
    parser_state: bytes | None = None  # pack_state(state); None: not saved this time

    def __reduce__(self) -> tuple[type[ProgressRow], tuple[Any, ...]]:
        return ProgressRow, _PROGRESS_VALUES(self)


# Each row's fields are its table's columns, in order: its values are its SQL parameters (and
# what it pickles as: a frozen dataclass's own pickling costs several times more).
CHUNK_COLUMNS = tuple(f.name for f in fields(ChunkRow))
KERNEL_COLUMNS = tuple(f.name for f in fields(KernelRow))
# A sim's progress, as `sims` columns (then the parser state saved with it, and the sim's id).
PROGRESS_COLUMNS = ("next_seq", "kernels_done", "kernels_failed", "current_kernel", "latest", "log_tail")
_CHUNK_VALUES = attrgetter(*CHUNK_COLUMNS)
_KERNEL_VALUES = attrgetter(*KERNEL_COLUMNS)
_PROGRESS_VALUES = attrgetter(*(f.name for f in fields(ProgressRow)))

_INSERT_CHUNK = "INSERT INTO log_chunks({}) VALUES ({})".format(
    ", ".join(CHUNK_COLUMNS), ",".join("?" * len(CHUNK_COLUMNS))
)
_INSERT_POWER = "INSERT OR REPLACE INTO kernel_power VALUES (?,?,?,?,?,?)"
_POWER_VALUES = attrgetter(*(f.name for f in fields(PowerRow)))
_INSERT_KERNEL = "INSERT OR REPLACE INTO kernels({}) VALUES ({})".format(
    ", ".join(KERNEL_COLUMNS), ",".join("?" * len(KERNEL_COLUMNS))
)
# A sim's progress and the parser state saved with it, in one UPDATE: the state and the seq it
# stands before only when saved (None: kept as they were).
_UPDATE_PROGRESS = "UPDATE sims SET {} WHERE id=?".format(
    ", ".join(
        [f"{column}=?" for column in PROGRESS_COLUMNS]
        + [f"{column}=coalesce(?, {column})" for column in ("parser_state", "parser_state_seq")]
    )
)


class KernelValues(Protocol):
    """What a kernel's row is built from (the log parser's ParsedKernel, placed)."""

    @property
    def kernel_index(self) -> int: ...
    @property
    def kernel_name(self) -> str: ...
    @property
    def kernel_launch_uid(self) -> int | None: ...
    @property
    def gpu_sim_cycle(self) -> int | None: ...
    @property
    def gpu_sim_insn(self) -> int | None: ...
    @property
    def gpu_ipc(self) -> float | None: ...
    @property
    def sim_time_ns(self) -> float | None: ...
    @property
    def stats(self) -> dict[str, float | str]: ...
    @property
    def failed(self) -> str | None: ...
    @property
    def estimated_from(self) -> int | None: ...


def chunk_row(sim_id: str, seq: int, text: str) -> ChunkRow:
    """A chunk's row, from its text (`chunk_text`)."""
    return ChunkRow(sim_id, seq, pack_text(text))


def kernel_row(sim_id: str, kernel: KernelValues) -> KernelRow:
    return KernelRow(
        sim_id,
        kernel.kernel_index,
        kernel.kernel_name,
        kernel.kernel_launch_uid,
        kernel.gpu_sim_cycle,
        kernel.gpu_sim_insn,
        kernel.gpu_ipc,
        kernel.sim_time_ns,
        pack_stats(kernel.stats),
        kernel.failed,
        kernel.estimated_from,
    )


def progress_row(
    sim_id: str,
    next_seq: int,
    kernels_done: int,
    current_kernel: str | None,
    latest: SimMetrics,
    log_tail: list[str],
    parser_state: dict[str, Any] | None = None,
    kernels_failed: int = 0,
) -> ProgressRow:
    """A sim's progress after its chunks before `next_seq`, with the parser's state there when it
    is to be saved."""
    return ProgressRow(
        sim_id,
        next_seq,
        kernels_done,
        kernels_failed,
        current_kernel,
        latest.model_dump_json(),
        json.dumps(log_tail),
        None if parser_state is None else pack_state(parser_state),
    )


def _progress_values(row: ProgressRow) -> tuple[Any, ...]:
    saved_at = None if row.parser_state is None else row.next_seq
    return (
        row.next_seq,
        row.kernels_done,
        row.kernels_failed,
        row.current_kernel,
        row.latest,
        row.log_tail,
        row.parser_state,
        saved_at,
        row.sim_id,
    )


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

    async def note_missing_chunks(self, tx: Transaction, sim_id: str, runs: list[tuple[int, int]]) -> None:
        """Record the runs of the sim's chunks that never arrived (migration 11), after those
        recorded before: the sim says so, not a line in its log."""
        await tx.conn.execute("UPDATE sims SET missing_log_chunks=? WHERE id=?", (json.dumps(runs), sim_id))

    async def stored_log_size(self, sim_id: str) -> int:
        """How long the sim's stored log is, in bytes of text (its chunks' content sizes, read
        from their frame headers: the chunks themselves are not read)."""
        async with self.db.r.execute(
            "SELECT substr(data, 1, ?), length(data) FROM log_chunks WHERE sim_id=?",
            (FRAME_HEADER_BYTES, sim_id),
        ) as cur:
            return sum(content_size(head, length) for head, length in await cur.fetchall())

    async def insert_chunks(self, tx: Transaction, chunks: Iterable[ChunkRow]) -> None:
        await tx.conn.executemany(_INSERT_CHUNK, [_CHUNK_VALUES(chunk) for chunk in chunks])

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
        chunks: Sequence[ChunkRow],
        kernels: Sequence[KernelRow],
        progress: Sequence[ProgressRow],
        power: Sequence[PowerRow] = (),
    ) -> None:
        """The write's last step, committed with it in one round trip: the chunks, the kernels
        they completed and each sim's progress (with its parser state, when saved)."""

        def save(conn: sqlite3.Connection) -> None:
            conn.executemany(_INSERT_CHUNK, map(_CHUNK_VALUES, chunks))
            conn.executemany(_INSERT_KERNEL, map(_KERNEL_VALUES, kernels))
            conn.executemany(_INSERT_POWER, map(_POWER_VALUES, power))
            conn.executemany(_UPDATE_PROGRESS, map(_progress_values, progress))

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
