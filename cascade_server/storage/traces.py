"""Traces: registered and updated by ingestion, read by the API and by runs."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

import aiosqlite

from ..events import Broker
from ..models import TERMINAL_SIM_STATES, RunSummary, TraceDetail, TraceSummary, utcnow
from .codecs import iso
from .core import Conflict, NotFound, StoreCore

_Listed = TypeVar("_Listed", RunSummary, TraceSummary)


def trace_in_use(trace_id: str, run_ids: list[str]) -> str:
    one = len(run_ids) == 1
    return (f"trace {trace_id} is used by active {'run' if one else 'runs'} {', '.join(run_ids)}: "
            f"cancel {'it' if one else 'them'} or wait until {'it finishes' if one else 'they finish'}")


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


class TraceStore(StoreCore):
    def __init__(self, path: Path, broker: Broker | None = None) -> None:
        super().__init__(path, broker)
        # Traces whose delete has begun (their bucket objects may be going): create_run refuses
        # them, so the delete can no longer meet an active run once it has passed its checks.
        self._deleting_traces: set[str] = set()

    async def put_trace(self, detail: TraceDetail) -> None:
        """Insert or replace a trace (ingestion registers and updates traces through this)."""
        async with self.write() as tx:
            await tx.conn.execute(
                "INSERT OR REPLACE INTO traces(id, created_at, doc) VALUES (?, ?, ?)",
                (detail.id, iso(detail.created_at), detail.model_dump_json()),
            )

    async def get_trace(self, trace_id: str) -> TraceDetail | None:
        async with self.r.execute("SELECT doc FROM traces WHERE id=?", (trace_id,)) as cur:
            row = await cur.fetchone()
        return None if row is None else TraceDetail.model_validate_json(row[0])

    async def list_traces(self, states: Iterable[str] = (), limit: int | None = None) -> list[TraceSummary]:
        """Newest first; only `states` when given, at most `limit`."""
        async with self.r.execute("SELECT doc FROM traces ORDER BY created_at DESC, id") as cur:
            rows = await cur.fetchall()
        return pick((TraceSummary.model_validate_json(row[0]) for row in rows), states, limit)

    async def reserve_trace_delete(self, trace_id: str) -> None:
        """Begin deleting a trace: check, under the writer lock, that it exists and no active run
        uses it, and mark it so no run starts on it until `delete_trace` or
        `release_trace_delete`. Raises NotFound, or Conflict (an active run, or a delete already
        under way) having changed nothing."""
        async with self.write() as tx:
            async with tx.conn.execute("SELECT 1 FROM traces WHERE id=?", (trace_id,)) as cur:
                if await cur.fetchone() is None:
                    raise NotFound(f"trace {trace_id} not found")
            if trace_id in self._deleting_traces:
                raise Conflict(f"trace {trace_id} is being deleted")
            if active := await self.active_runs_of(trace_id, tx.conn):
                raise Conflict(trace_in_use(trace_id, active))
            self._deleting_traces.add(trace_id)

    def release_trace_delete(self, trace_id: str) -> None:
        """A delete that could not finish (the bucket refused it): the trace is usable again."""
        self._deleting_traces.discard(trace_id)

    def trace_being_deleted(self, trace_id: str) -> bool:
        return trace_id in self._deleting_traces

    async def delete_trace(self, trace_id: str) -> None:
        """Remove a trace that no active run uses (its runs stay, naming a trace that no longer
        exists), ending a delete `reserve_trace_delete` began. Raises NotFound, or Conflict
        when an active run uses it."""
        async with self.write() as tx:
            self._deleting_traces.discard(trace_id)
            async with tx.conn.execute("SELECT 1 FROM traces WHERE id=?", (trace_id,)) as cur:
                if await cur.fetchone() is None:
                    raise NotFound(f"trace {trace_id} not found")
            if active := await self.active_runs_of(trace_id, tx.conn):
                raise Conflict(trace_in_use(trace_id, active))
            await tx.conn.execute("DELETE FROM traces WHERE id=?", (trace_id,))

    async def active_runs_of(self, trace_id: str, conn: aiosqlite.Connection | None = None) -> list[str]:
        """The ids of the trace's runs that still have an unfinished sim."""
        placeholders = ",".join("?" * len(TERMINAL_SIM_STATES))
        async with (conn or self.r).execute(
            f"SELECT DISTINCT runs.id FROM runs JOIN sims ON sims.run_id = runs.id WHERE runs.trace_id=?"
            f" AND sims.state NOT IN ({placeholders}) ORDER BY runs.id",
            (trace_id, *sorted(TERMINAL_SIM_STATES)),
        ) as cur:
            return [row[0] for row in await cur.fetchall()]

    async def _trace_summary(self, trace_id: str) -> TraceSummary:
        detail = await self.get_trace(trace_id)
        if detail is None:  # a run's trace was removed by hand: keep the run readable
            now = utcnow()
            return TraceSummary(id=trace_id, state="failed", error="trace no longer exists",
                                created_at=now, updated_at=now)
        return detail.summary()
