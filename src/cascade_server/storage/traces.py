"""Traces: registered and updated by ingestion, read by the API and by runs."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TypeVar

import aiosqlite

from cascade_core.models import TERMINAL_SIM_STATES, RunEntry, RunSummary, TraceDetail, TraceSummary, utcnow
from cascade_core.real_timing import RealRow

from ..domain_errors import Conflict, NotFound
from ..gpu_configs import arch_from_name
from . import real_timing as real_rows
from .codecs import iso
from .database import Database

_Listed = TypeVar("_Listed", RunSummary, TraceSummary)


def trace_in_use(trace_id: str, run_ids: list[str]) -> str:
    one = len(run_ids) == 1
    return (
        f"trace {trace_id} is used by active {'run' if one else 'runs'} {', '.join(run_ids)}: "
        f"cancel {'it' if one else 'them'} or wait until {'it finishes' if one else 'they finish'}"
    )


def deleted_trace_record(trace: TraceSummary, trace_id: str, deleted_at: datetime) -> TraceSummary:
    """What a run shows of its trace once that trace is deleted: the trace as it was (id, model,
    arch, kernels), failed with an error saying so, and without the real timing that went with
    its files."""
    error = (
        f"trace {trace_id} was deleted at {iso(deleted_at)}; "
        "a trace uploaded since under this id is another trace"
    )
    return trace.model_copy(
        update={
            "state": "failed",
            "error": error,
            "updated_at": deleted_at,
            "has_real_timing": False,
            "real_timing_error": None,
        }
    )


def unrecorded_trace(trace_id: str, run_created_at: datetime, entries: list[RunEntry]) -> TraceSummary:
    """What a run shows of a trace deleted before deletes kept a record: only what is known. When
    it was deleted is not. Its arch is that of the run's configs (a run's configs match its
    trace's arch), the model's default only when their names disagree; its times are the run's,
    the one moment the trace is known to have existed (TraceSummary's times cannot be null)."""
    arches = {arch_from_name(entry.gpu_config) for entry in entries}
    error = (
        f"trace {trace_id} was deleted before this server kept records of deleted traces "
        "(when is not known); a trace uploaded since under this id is another trace"
    )
    trace = TraceSummary(
        id=trace_id, state="failed", error=error, created_at=run_created_at, updated_at=run_created_at
    )
    if len(arches) == 1 and (arch := arches.pop()) is not None:
        trace.trace_gpu_arch = arch
    return trace


def pick(items: Iterable[_Listed], states: Iterable[str], limit: int | None) -> list[_Listed]:
    """The first `limit` items whose state is one of `states` (every state when none given)."""
    wanted = set(states)
    picked: list[_Listed] = []
    for item in items:
        if limit is not None and len(picked) >= limit:
            break
        if not wanted or item.state in wanted:
            picked.append(item)
    return picked


class TraceRepository:
    """Traces, and the journal of their deletes."""

    def __init__(self, db: Database) -> None:
        self.db = db
        # Traces whose delete has begun (their bucket objects may be going): create_run refuses
        # them, so the delete can no longer meet an active run once it has passed its checks.
        self._deleting_traces: set[str] = set()
        # Journaled deletes being carried out in this process (by a request from
        # `reserve_trace_delete` on, or by a resumption): no second one starts on them.
        self.deletes_under_way: set[str] = set()

    async def put_trace(self, detail: TraceDetail, real_timing: Sequence[RealRow] | None = None) -> None:
        """Insert or replace a trace (ingestion registers and updates traces through this). With
        `real_timing`, the trace's real kernel times become those rows in the same write (a
        trace is never ready with `has_real_timing` and no rows to answer from)."""
        async with self.db.write() as tx:
            await tx.conn.execute(
                "INSERT OR REPLACE INTO traces(id, created_at, doc) VALUES (?, ?, ?)",
                (detail.id, iso(detail.created_at), detail.model_dump_json()),
            )
            if real_timing is not None:
                await tx.run(lambda conn: real_rows.replace_rows(conn, detail.id, real_timing))

    async def real_timing(self, trace_id: str) -> real_rows.StoredTiming:
        """The trace's real kernel times as `/comparison` pairs them (empty without)."""
        return await self.db.read(lambda conn: real_rows.read_rows(conn, trace_id))

    async def traces_missing_real_timing(self) -> list[str]:
        """Ready traces that say they have real timing and have no rows of it: ready before the
        rows were kept (migration 10), to be read once more from their files."""
        stored = await self.db.read(real_rows.traces_with_rows)
        return [
            t.id
            for t in await self.list_traces(["ready"])
            if t.has_real_timing and not t.sample and t.id not in stored
        ]

    async def get_trace(self, trace_id: str) -> TraceDetail | None:
        async with self.db.r.execute("SELECT doc FROM traces WHERE id=?", (trace_id,)) as cur:
            row = await cur.fetchone()
        return None if row is None else TraceDetail.model_validate_json(row[0])

    async def require_trace(self, trace_id: str) -> TraceDetail:
        """The trace, or NotFound (404), as `runs.require_run` does for a run."""
        trace = await self.get_trace(trace_id)
        if trace is None:
            raise NotFound(f"trace {trace_id} not found")
        return trace

    async def list_traces(self, states: Iterable[str] = (), limit: int | None = None) -> list[TraceSummary]:
        """Newest first; only `states` when given, at most `limit`."""
        async with self.db.r.execute("SELECT doc FROM traces ORDER BY created_at DESC, id") as cur:
            rows = await cur.fetchall()
        return pick((TraceSummary.model_validate_json(row[0]) for row in rows), states, limit)

    async def reserve_trace_delete(self, trace_id: str) -> None:
        """Begin deleting a trace: check, under the writer lock, that it exists and no active run
        uses it, and journal the delete (`trace_deletes`) in the same transaction, so a crash from
        here on leaves a delete to finish (`trace_deletes_in_progress`), never a half-deleted
        trace that looks whole. No run starts on it until `end_trace_delete` or
        `release_trace_delete`. Raises NotFound, or Conflict (an active run, or a delete already
        under way) having changed nothing."""
        async with self.db.write() as tx:
            async with tx.conn.execute("SELECT 1 FROM traces WHERE id=?", (trace_id,)) as cur:
                if await cur.fetchone() is None:
                    raise NotFound(f"trace {trace_id} not found")
            async with tx.conn.execute("SELECT 1 FROM trace_deletes WHERE trace_id=?", (trace_id,)) as cur:
                journaled = await cur.fetchone() is not None
            if journaled or trace_id in self._deleting_traces:
                raise Conflict(f"trace {trace_id} is being deleted")
            if active := await self.active_runs_of(trace_id, tx.conn):
                raise Conflict(trace_in_use(trace_id, active))
            await tx.conn.execute(
                "INSERT INTO trace_deletes(trace_id, started_at) VALUES (?, ?)", (trace_id, iso(utcnow()))
            )
            self._deleting_traces.add(trace_id)
            self.deletes_under_way.add(trace_id)  # the caller carries it out: no resumption does

    async def release_trace_delete(self, trace_id: str) -> None:
        """A delete that could not finish (the bucket refused it): the trace is usable again."""
        async with self.db.write() as tx:
            await tx.conn.execute("DELETE FROM trace_deletes WHERE trace_id=?", (trace_id,))
            self._deleting_traces.discard(trace_id)
            self.deletes_under_way.discard(trace_id)

    async def end_trace_delete(self, trace_id: str) -> None:
        """A delete is complete (objects, row and mirror gone): drop it from the journal."""
        async with self.db.write() as tx:
            await tx.conn.execute("DELETE FROM trace_deletes WHERE trace_id=?", (trace_id,))
            self._deleting_traces.discard(trace_id)
            self.deletes_under_way.discard(trace_id)

    async def trace_deletes_in_progress(self) -> list[str]:
        """The journaled deletes not yet complete (interrupted by a crash, or under way); their
        traces take no new run."""
        async with self.db.r.execute(
            "SELECT trace_id FROM trace_deletes ORDER BY started_at, trace_id"
        ) as cur:
            trace_ids = [row[0] for row in await cur.fetchall()]
        self._deleting_traces.update(trace_ids)
        return trace_ids

    def trace_being_deleted(self, trace_id: str) -> bool:
        return trace_id in self._deleting_traces

    async def delete_trace(self, trace_id: str) -> None:
        """Remove a trace that no active run uses, ending a delete `reserve_trace_delete` began.
        Its runs stay, keeping the trace's record (`deleted_trace_record`) in the same write: a
        trace uploaded later under the same id is another trace, never joined to them.
        Raises NotFound, or Conflict when an active run uses it."""
        async with self.db.write() as tx:
            async with tx.conn.execute("SELECT doc FROM traces WHERE id=?", (trace_id,)) as cur:
                row = await cur.fetchone()
            if row is None:
                raise NotFound(f"trace {trace_id} not found")
            if active := await self.active_runs_of(trace_id, tx.conn):
                raise Conflict(trace_in_use(trace_id, active))
            now = utcnow()
            record = deleted_trace_record(TraceDetail.model_validate_json(row[0]).summary(), trace_id, now)
            await tx.conn.execute(
                "UPDATE runs SET trace_deleted_at=?, trace_record=? WHERE trace_id=? AND trace_deleted_at IS NULL",
                (iso(now), record.model_dump_json(), trace_id),
            )
            await tx.conn.execute("DELETE FROM traces WHERE id=?", (trace_id,))
            await tx.run(lambda conn: real_rows.delete_rows(conn, trace_id))

    async def active_runs_of(self, trace_id: str, conn: aiosqlite.Connection | None = None) -> list[str]:
        """The ids of the trace's runs that still have an unfinished sim."""
        placeholders = ",".join("?" * len(TERMINAL_SIM_STATES))
        async with (conn or self.db.r).execute(
            f"SELECT DISTINCT runs.id FROM runs JOIN sims ON sims.run_id = runs.id WHERE runs.trace_id=?"
            f" AND sims.state NOT IN ({placeholders}) ORDER BY runs.id",
            (trace_id, *sorted(TERMINAL_SIM_STATES)),
        ) as cur:
            return [row[0] for row in await cur.fetchall()]

    async def trace_of_run_row(self, run: aiosqlite.Row) -> TraceSummary:
        """The trace of a run (its `runs` row): the live trace, or the record of a deleted one."""
        if run["trace_record"] is not None:
            return TraceSummary.model_validate_json(run["trace_record"])
        if run["trace_deleted_at"] is not None:  # gone before deletes kept a record (migration 5)
            entries = [RunEntry.model_validate(e) for e in json.loads(run["entries"])]
            return unrecorded_trace(run["trace_id"], datetime.fromisoformat(run["created_at"]), entries)
        detail = await self.get_trace(run["trace_id"])
        if detail is None:  # a run's trace was removed by hand: keep the run readable
            now = utcnow()
            return TraceSummary(
                id=run["trace_id"],
                state="failed",
                error="trace no longer exists",
                created_at=now,
                updated_at=now,
            )
        return detail.summary()

    async def live_trace_of_run(self, run_id: str) -> TraceDetail | None:
        """The trace a run was made on, if it still exists: None once it was deleted, even if a
        trace of the same id was uploaded since (that one is another trace)."""
        async with self.db.r.execute(
            "SELECT trace_id, trace_deleted_at FROM runs WHERE id=?", (run_id,)
        ) as cur:
            row = await cur.fetchone()
        if row is None or row[1] is not None:
            return None
        return await self.get_trace(row[0])
