"""Runs and their sims: creating a run, and reading runs and sims back."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import aiosqlite

from cascade_core.models import (
    GpuConfig,
    RunDetail,
    RunEntry,
    RunSummary,
    SimEvent,
    SimSummary,
    TraceDetail,
    run_state,
    utcnow,
)
from cascade_core.sampling import SimSample
from cascade_core.shard_plan import ShardRange
from cascade_core.variants import core_clock_mhz

from ..domain_errors import Conflict, NotFound
from .codecs import iso, new_id, sim_from_row
from .database import Database
from .shard_columns import INSERT_COLUMNS, insert_values
from .traces import TraceRepository, pick


class RunRepository:
    """Runs and their sims (one aggregate: a sim never outlives its run)."""

    def __init__(self, db: Database, traces: TraceRepository) -> None:
        self.db, self.traces = db, traces

    async def create_run(
        self,
        trace: TraceDetail,
        entries: list[RunEntry],
        configs: dict[str, GpuConfig],
        *,
        sample: bool = False,
        replay: bool = False,
        shard_plans: dict[str, list[ShardRange]] | None = None,
        samples: dict[str, list[tuple[ShardRange | None, SimSample]]] | None = None,
    ) -> RunDetail:
        """A run and its sims, every sim `pending`; one sim per replica of each entry (one per
        shard of each replica for an entry in `shard_plans`, by its variant)."""
        run_id = new_id("run")
        now = iso(utcnow())
        kernels_total = trace.kernel_count or len(trace.kernels)
        async with self.db.write() as tx:
            # Under the lock: a trace deleted since the caller read it gets no run.
            async with tx.conn.execute("SELECT 1 FROM traces WHERE id=?", (trace.id,)) as cur:
                if await cur.fetchone() is None:
                    raise NotFound(f"trace {trace.id} not found")
            if self.traces.trace_being_deleted(trace.id):
                raise Conflict(f"trace {trace.id} is being deleted")
            await tx.conn.execute(
                "INSERT INTO runs(id, trace_id, created_at, entries, sample, replay) VALUES (?,?,?,?,?,?)",
                (run_id, trace.id, now, json.dumps([e.model_dump() for e in entries]), sample, replay),
            )
            await tx.conn.executemany(
                "INSERT INTO sims(id, run_id, gpu_config, replica, state, state_since, created_at,"
                " kernels_total, core_clock_mhz, options, label, on_kernel_failure, warmup_kernels, sampling,"
                f" trace_kernels, power, {', '.join(INSERT_COLUMNS)})"
                " VALUES (?,?,?,?,'pending',?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [
                    (
                        new_id("sim"),
                        run_id,
                        e.gpu_config,
                        replica,
                        now,
                        now,
                        len(sample.representatives) if sample else shard.kernels if shard else kernels_total,
                        core_clock_mhz(e.options, configs[e.gpu_config].core_clock_mhz),
                        json.dumps(e.options) if e.options else None,
                        e.label,
                        None if e.on_kernel_failure == "continue" else e.on_kernel_failure,
                        None if e.warmup_kernels == 1 else e.warmup_kernels,
                        sample.to_json() if sample else None,
                        kernels_total,
                        1 if e.power else None,
                        *insert_values(shard),
                    )
                    for e in entries
                    for replica in range(e.count)
                    for shard, sample in _sims_of(shard_plans, samples, e.variant)
                ],
            )
        detail = await self.get_run(run_id)
        assert detail is not None
        return detail

    async def get_run(self, run_id: str, conn: aiosqlite.Connection | None = None) -> RunDetail | None:
        conn = conn or self.db.r
        async with conn.execute("SELECT * FROM runs WHERE id=?", (run_id,)) as cur:
            row = await cur.fetchone()
        if row is None:
            return None
        async with conn.execute(
            "SELECT * FROM sims WHERE run_id=? AND retried_by IS NULL"
            " ORDER BY gpu_config, label, replica, shard_index",
            (run_id,),
        ) as cur:
            sim_rows = await cur.fetchall()
        sims = [sim_from_row(sim) for sim in sim_rows]
        return RunDetail(
            **_summary(row, [(s["state"], s["started_at"], s["finished_at"]) for s in sim_rows]),
            trace=await self.traces.trace_of_run_row(row),
            sims=sims,
        )

    async def require_run(self, run_id: str) -> RunDetail:
        run = await self.get_run(run_id)
        if run is None:
            raise NotFound(f"run {run_id} not found")
        return run

    async def list_runs(self, states: Iterable[str] = (), limit: int | None = None) -> list[RunSummary]:
        """Newest first; only runs in `states` when given (a run's state is derived, so that
        filter runs here rather than in SQL), at most `limit` (in SQL when no state filters)."""
        states = list(states)
        newest = "SELECT * FROM runs ORDER BY created_at DESC, id"
        limited = limit is not None and not states
        params = (limit,) if limited else ()
        if limited:
            newest += " LIMIT ?"
        async with self.db.r.execute(newest, params) as cur:
            runs = await cur.fetchall()
        sims = "SELECT run_id, state, started_at, finished_at FROM sims WHERE retried_by IS NULL"
        if limited:
            sims += f" AND run_id IN ({newest.replace('*', 'id', 1)})"
        async with self.db.r.execute(sims, params) as cur:
            sim_times: dict[str, list[SimTimes]] = {}
            for run_id, state, started_at, finished_at in await cur.fetchall():
                sim_times.setdefault(run_id, []).append((state, started_at, finished_at))
        summaries = (RunSummary(**_summary(row, sim_times.get(row["id"], []))) for row in runs)
        return pick(summaries, states, limit)

    async def delete_run(self, run_id: str) -> RunDetail:
        """Remove a finished run with its sims, log chunks, kernels, file records and step
        timelines; returns the run as it was (its sims' files on disk are the caller's).
        Raises NotFound, or Conflict while the run is active."""
        async with self.db.write() as tx:
            run = await self.get_run(run_id, tx.conn)
            if run is None:
                raise NotFound(f"run {run_id} not found")
            if run.state == "active":
                raise Conflict(f"run {run_id} is active: cancel it first (POST /api/runs/{run_id}/cancel)")
            async with tx.conn.execute("SELECT id FROM sims WHERE run_id=?", (run_id,)) as cur:
                sim_ids = [row[0] for row in await cur.fetchall()]  # with sims retried in place
            marks = ",".join("?" * len(sim_ids))
            for table in ("log_chunks", "kernels", "kernel_power", "files", "step_timelines"):
                await tx.conn.execute(f"DELETE FROM {table} WHERE sim_id IN ({marks})", sim_ids)
            await tx.conn.execute("DELETE FROM sims WHERE run_id=?", (run_id,))
            await tx.conn.execute("DELETE FROM runs WHERE id=?", (run_id,))
        # After the commit: a stream that subscribes from now on finds no run (a 404) instead.
        self.db.broker.end(run_id)
        return run

    async def retry_in_place(self, run_id: str) -> tuple[RunDetail, list[SimSummary]]:
        """A new pending sim for each of the run's failed sims and cancelled shards, in the same
        run, for the same config (variant), replica and shard (issue 23: a sharded run's retry;
        a replica's merged result needs every one of its shards, so a cancelled shard is retried
        too, issue 32). The old sim names its replacement (`retried_by`) and is no longer one of
        the run's sims (its log, files and results stay reachable by its id); the new sim names
        it (`retry_of`). Returns the run and the new sims. Raises NotFound, or Conflict when
        there is nothing to retry."""
        async with self.db.write() as tx:
            run = await self.get_run(run_id, tx.conn)
            if run is None:
                raise NotFound(f"run {run_id} not found")
            failed = [
                sim.id
                for sim in run.sims
                if sim.state == "failed" or (sim.state == "cancelled" and sim.shard is not None)
            ]
            if not failed:
                raise Conflict(f"run {run_id} has no failed sims or cancelled shards to retry")
            now = iso(utcnow())
            created = []
            for old_id in failed:
                new = new_id("sim")
                await tx.conn.execute(
                    "INSERT INTO sims(id, run_id, gpu_config, replica, state, state_since, created_at,"
                    " kernels_total, core_clock_mhz, options, label, on_kernel_failure, warmup_kernels, sampling,"
                    f" trace_kernels, power, {', '.join(INSERT_COLUMNS)}, retry_of)"
                    " SELECT ?, run_id, gpu_config, replica, 'pending', ?, ?, kernels_total, core_clock_mhz,"
                    " options, label, on_kernel_failure, warmup_kernels, sampling, trace_kernels, power,"
                    f" {', '.join(INSERT_COLUMNS)}, id FROM sims WHERE id=?",
                    (new, now, now, old_id),
                )
                await tx.conn.execute("UPDATE sims SET retried_by=? WHERE id=?", (new, old_id))
                sim = await self.get_sim(new, tx.conn)
                assert sim is not None
                created.append(sim)
            tx.publish(run_id, [SimEvent(sim=sim) for sim in created])
            run = await self.get_run(run_id, tx.conn)
            assert run is not None
        return run, created

    async def all_sim_ids(self, run_id: str) -> list[str]:
        """Every sim the run ever had, with those retried in place (whose files go with the run)."""
        async with self.db.r.execute("SELECT id FROM sims WHERE run_id=?", (run_id,)) as cur:
            return [row[0] for row in await cur.fetchall()]

    async def get_sim(self, sim_id: str, conn: aiosqlite.Connection | None = None) -> SimSummary | None:
        async with (conn or self.db.r).execute("SELECT * FROM sims WHERE id=?", (sim_id,)) as cur:
            row = await cur.fetchone()
        return None if row is None else sim_from_row(row)

    async def require_sim(self, sim_id: str) -> SimSummary:
        sim = await self.get_sim(sim_id)
        if sim is None:
            raise NotFound(f"sim {sim_id} not found")
        return sim

    async def sims_in_states(self, states: Iterable[str]) -> list[tuple[SimSummary, str]]:
        """(sim, trace_id) for every sim in one of `states` (launchers resume these)."""
        states = list(states)
        marks = ",".join("?" * len(states))
        async with self.db.r.execute(
            f"SELECT sims.*, runs.trace_id AS trace_id FROM sims JOIN runs ON runs.id = sims.run_id"
            f" WHERE sims.state IN ({marks}) ORDER BY sims.created_at, sims.gpu_config, sims.replica",
            states,
        ) as cur:
            return [(sim_from_row(row), row["trace_id"]) for row in await cur.fetchall()]


def _sims_of(
    plans: dict[str, list[ShardRange]] | None,
    samples: dict[str, list[tuple[ShardRange | None, SimSample]]] | None,
    variant: str,
) -> list[tuple[ShardRange | None, SimSample | None]]:
    """A replica's sims: its shards (one None: a sim of the whole trace), each with its sample
    when the entry samples."""
    if samples and variant in samples:
        return list(samples[variant])
    shards: list[ShardRange | None] = list((plans or {}).get(variant) or [])
    return [(shard, None) for shard in shards or [None]]


# A sim's state, started_at and finished_at as stored (ISO text, which sorts as time): what a
# run's summary is derived from.
SimTimes = tuple[str, str | None, str | None]


def _summary(row: aiosqlite.Row, sims: list[SimTimes]) -> dict[str, Any]:
    """A run's summary fields from its row and its sims' states and times."""
    counts: dict[str, int] = {}
    for state, _, _ in sims:
        counts[state] = counts.get(state, 0) + 1
    states = [state for state, _, _ in sims]
    starts = [started for _, started, _ in sims if started is not None]
    ends = [finished for _, _, finished in sims if finished is not None]
    state = run_state(states)
    return dict(
        id=row["id"],
        trace_id=row["trace_id"],
        created_at=row["created_at"],
        state=state,
        entries=json.loads(row["entries"]),
        sim_counts=counts,
        sample=bool(row["sample"]),
        replay=bool(row["replay"]),
        started_at=min(starts, default=None),
        # A cancelled sim that never ran still has its finished_at: a run of them has an end too.
        finished_at=max(ends, default=None) if state != "active" else None,
    )
