"""Traces: registered and updated by ingestion, read by the API and by runs."""

from __future__ import annotations

from ..models import TraceDetail, TraceSummary, utcnow
from .codecs import iso
from .core import StoreCore


class TraceStore(StoreCore):
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

    async def list_traces(self) -> list[TraceSummary]:
        async with self.r.execute("SELECT doc FROM traces ORDER BY created_at DESC, id") as cur:
            rows = await cur.fetchall()
        return [TraceSummary.model_validate_json(row[0]) for row in rows]

    async def _trace_summary(self, trace_id: str) -> TraceSummary:
        detail = await self.get_trace(trace_id)
        if detail is None:  # a run's trace was removed by hand: keep the run readable
            now = utcnow()
            return TraceSummary(id=trace_id, state="failed", error="trace no longer exists",
                                created_at=now, updated_at=now)
        return detail.summary()
