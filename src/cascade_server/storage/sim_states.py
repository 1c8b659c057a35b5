"""Sim state changes: heartbeats, launchers, the heartbeat monitor and cancelling a run.

Every move follows `models.SIM_TRANSITIONS` (`can_transition`); the sim's new row is published
as a `SimEvent` once the change commits."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from cascade_core.models import (
    TERMINAL_SIM_STATES,
    Heartbeat,
    HeartbeatAck,
    RunDetail,
    SimEvent,
    SimSummary,
    can_transition,
    utcnow,
)

from ..domain_errors import NotFound
from ..reported_time import reported_time
from .codecs import iso, sim_from_row
from .database import Database, Transaction
from .runs import RunRepository


class SimStateRepository:
    """Sims moving between states."""

    def __init__(self, db: Database, runs: RunRepository) -> None:
        self.db, self.runs = db, runs

    async def _update_sim(self, tx: Transaction, sim_id: str, **fields: Any) -> SimSummary:
        """Update columns within `tx` and return the sim as it now is."""
        sets = ", ".join(f"{name}=?" for name in fields)
        await tx.conn.execute(f"UPDATE sims SET {sets} WHERE id=?", (*fields.values(), sim_id))
        sim = await self.runs.get_sim(sim_id, tx.conn)
        assert sim is not None
        return sim

    async def heartbeat(self, sim_id: str, beat: Heartbeat) -> HeartbeatAck:
        async with self.db.write() as tx:
            sim = await self.runs.get_sim(sim_id, tx.conn)
            if sim is None:
                raise NotFound(f"sim {sim_id} not found")
            if sim.state in TERMINAL_SIM_STATES:
                # A finished sim keeps its final state; one the server has stopped listening to
                # (cancelled, or failed for silence while it kept working) is told to stop.
                return HeartbeatAck(state=sim.state, cancel=_must_stop(sim.state, beat.state))
            now_dt = utcnow()
            now = iso(now_dt)
            fields: dict[str, Any] = {"last_heartbeat_at": now}
            if sim.state == "pending" and sim.launcher_ref is not None:
                # Queued in a scheduler (Slurm) and started before the launcher's next look:
                # the heartbeat proves it launched (pending -> launching -> the beat's state).
                sim = sim.model_copy(update={"state": "launching"})
                fields.update(_move(sim, "launching", now))
            if beat.state != sim.state and can_transition(sim.state, beat.state):
                fields.update(_move(sim, beat.state, now))
            if fields.get("state", sim.state) == "running" and beat.state == "running":
                fields["error"] = None  # a running heartbeat clears an earlier `lost` reason
                if sim.started_at is None:  # when the sim says it started, not when we heard
                    fields["started_at"] = iso(reported_time(beat.at, now_dt, sim.created_at))
            if fields.get("state") in TERMINAL_SIM_STATES:
                fields["exit_code"] = beat.exit_code
                fields["error"] = beat.error
                # When the sim ended, as it reports it (a final heartbeat retried after a server
                # outage still carries it): the outage is not the sim's time.
                started = sim.started_at or sim.created_at
                fields["finished_at"] = iso(reported_time(beat.at, now_dt, started))
            updated = await self._update_sim(tx, sim_id, **fields)
            tx.publish(updated.run_id, [SimEvent(sim=updated)])
        return HeartbeatAck(state=updated.state, cancel=updated.state == "cancelled")

    async def mark_launching(self, sim_id: str, launcher_ref: str | None) -> None:
        """The launcher started (or is starting) this sim. Pending -> launching; a later call
        only records the `launcher_ref`."""
        async with self.db.write() as tx:
            sim = await self.runs.get_sim(sim_id, tx.conn)
            if sim is None or sim.state in TERMINAL_SIM_STATES:
                return
            fields: dict[str, Any] = {}
            if launcher_ref is not None:
                fields["launcher_ref"] = launcher_ref
            if sim.state == "pending":
                fields = _move(sim, "launching", iso(utcnow()), **fields)
            if not fields:
                return
            updated = await self._update_sim(tx, sim_id, **fields)
            tx.publish(updated.run_id, [SimEvent(sim=updated)])

    async def set_launcher_view(self, sim_id: str, **fields: str | None) -> None:
        """Record what the launcher knows of an unfinished sim's job without moving its state:
        `launcher_ref` (a job id given while the sim waits `pending`), `launcher_state`."""
        async with self.db.write() as tx:
            sim = await self.runs.get_sim(sim_id, tx.conn)
            if sim is None or sim.state in TERMINAL_SIM_STATES:
                return
            changed = {k: v for k, v in fields.items() if getattr(sim, k) != v}
            if not changed:
                return
            updated = await self._update_sim(tx, sim_id, **changed)
            tx.publish(updated.run_id, [SimEvent(sim=updated)])

    async def set_launcher_refs(self, refs: dict[str, str]) -> None:
        """Job ids for sims a scheduler queued (sim_id -> launcher_ref), in one transaction; the
        sims stay `pending` (a finished one is left alone)."""
        async with self.db.write() as tx:
            changed = []
            for sim_id, ref in refs.items():
                sim = await self.runs.get_sim(sim_id, tx.conn)
                if sim is not None and sim.state not in TERMINAL_SIM_STATES and sim.launcher_ref != ref:
                    changed.append(await self._update_sim(tx, sim_id, launcher_ref=ref))
            for sim in changed:
                tx.publish(sim.run_id, [SimEvent(sim=sim)])

    async def add_failure_cause(self, sim_id: str, cause: str) -> None:
        """A failed sim's error gains what ended it, as the scheduler tells it:
        `worker stopped by SIGTERM (Slurm job 12_0 TIMEOUT)`."""
        async with self.db.write() as tx:
            sim = await self.runs.get_sim(sim_id, tx.conn)
            if sim is None or sim.state != "failed" or cause in (sim.error or ""):
                return
            updated = await self._update_sim(
                tx, sim_id, error=f"{sim.error} ({cause})" if sim.error else cause
            )
            tx.publish(updated.run_id, [SimEvent(sim=updated)])

    async def mark_failed(self, sim_id: str, error: str, exit_code: int | None = None) -> None:
        """A launcher saw the sim's process end (or fail to start) without a final heartbeat."""
        async with self.db.write() as tx:
            sim = await self.runs.get_sim(sim_id, tx.conn)
            if sim is None or not can_transition(sim.state, "failed"):
                return
            fields = _move(sim, "failed", iso(utcnow()), error=error, exit_code=exit_code)
            updated = await self._update_sim(tx, sim_id, **fields)
            tx.publish(updated.run_id, [SimEvent(sim=updated)])

    async def cancel_run(self, run_id: str) -> tuple[RunDetail, list[SimSummary]]:
        """Every unfinished sim -> cancelled. Returns the run and the sims that were cancelled."""
        async with self.db.write() as tx:
            run = await self.runs.get_run(run_id, tx.conn)
            if run is None:
                raise NotFound(f"run {run_id} not found")
            now = iso(utcnow())
            cancelled = []
            for sim in run.sims:
                if can_transition(sim.state, "cancelled"):
                    fields = _move(sim, "cancelled", now)
                    cancelled.append(await self._update_sim(tx, sim.id, **fields))
            if not cancelled:
                return run, []
            tx.publish(run_id, [SimEvent(sim=s) for s in cancelled])
            run = await self.runs.get_run(run_id, tx.conn)
            assert run is not None
        return run, cancelled

    async def expire_heartbeats(
        self, timeout_s: float, now: datetime | None = None, awake_since: datetime | None = None
    ) -> list[SimSummary]:
        """The heartbeat monitor: `lost` after `timeout_s` without a heartbeat, `failed` after 10x.
        Silence before `awake_since` (when the server last started running again) is not
        counted: the server was not there to hear the heartbeats (monitor.py)."""
        now_dt = now or utcnow()
        awake = iso(awake_since) if awake_since is not None else ""
        lost_before = iso(now_dt - timedelta(seconds=timeout_s))
        failed_before = iso(now_dt - timedelta(seconds=10 * timeout_s))
        changed: list[SimSummary] = []
        async with self.db.write() as tx:
            # The states a sim sends heartbeats in: `pending` has none yet, terminal ones stopped.
            async with tx.conn.execute(
                "SELECT * FROM sims WHERE state IN ('launching','running','lost')"
                " AND COALESCE(last_heartbeat_at, state_since) < ?",
                (lost_before,),
            ) as cur:
                rows = await cur.fetchall()
            stamp = iso(now_dt)
            for row in rows:
                sim = sim_from_row(row)
                silent_since = max(row["last_heartbeat_at"] or row["state_since"], awake)
                if silent_since >= lost_before:
                    continue
                if sim.state == "lost":
                    if silent_since >= failed_before:
                        continue
                    fields = _move(
                        sim,
                        "failed",
                        stamp,
                        error=f"no heartbeat for {_seconds(10 * timeout_s)}: the sim was lost and did not come back",
                    )
                else:
                    fields = _move(sim, "lost", stamp, error=f"no heartbeat for {_seconds(timeout_s)}")
                    fields["state_since"] = silent_since  # keep the clock for the 10x rule
                changed.append(await self._update_sim(tx, sim.id, **fields))
            for sim in changed:
                tx.publish(sim.run_id, [SimEvent(sim=sim)])
        return changed


def _must_stop(stored: str, reported: str) -> bool:
    """A heartbeat to a finished sim: stop when it was cancelled, or when it still reports work on
    a sim the server has failed (given up for silence, or its launcher saw it end): nothing it
    sends counts any more, so simulating on only holds a CPU."""
    return stored == "cancelled" or (stored == "failed" and reported == "running")


def _move(sim: SimSummary, target: str, now: str, **fields: Any) -> dict[str, Any]:
    """Column values for moving `sim` to `target` (caller checked the transition)."""
    fields = dict(state=target, state_since=now, **fields)
    if target in TERMINAL_SIM_STATES:
        fields["finished_at"] = now
        fields["launcher_state"] = None  # a scheduler's word on the job means nothing after the end
    return fields


def _seconds(value: float) -> str:
    return f"{value:g} s"
