"""SQLite storage (aiosqlite, WAL) with one serialized writer.

Every change goes through `Store.lock`: the change is committed, then its events are published
while the lock is still held, so events reach subscribers in commit order and a snapshot taken
under the lock never overlaps the events after it. A returned write means the data is committed
(WAL survives `kill -9` of the server).
"""

from __future__ import annotations

import asyncio
import json
import pickle
import secrets
import zlib
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta, UTC
from pathlib import Path
from typing import Any

import aiosqlite

from .accelsim_log import LogParser
from .events import Broker, sse_frame
from .models import (
    TERMINAL_SIM_STATES,
    GpuConfig,
    Heartbeat,
    HeartbeatAck,
    KernelEvent,
    KernelStat,
    LogEvent,
    RunDetail,
    RunEntry,
    RunFile,
    RunSummary,
    SimEvent,
    SimFile,
    SimMetrics,
    SimStepTimeline,
    SimSummary,
    SnapshotEvent,
    StepTimelineUpload,
    TraceDetail,
    TraceSummary,
    can_transition,
    run_state,
    utcnow,
)

LOG_TAIL_LINES = 20

MIGRATIONS: list[str] = [
    # 1: the first schema
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE traces (
        id TEXT PRIMARY KEY,
        created_at TEXT NOT NULL,
        doc TEXT NOT NULL               -- TraceDetail as JSON
    );
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        trace_id TEXT NOT NULL,
        created_at TEXT NOT NULL,
        entries TEXT NOT NULL,          -- list[RunEntry] as JSON
        sample INTEGER NOT NULL DEFAULT 0,
        replay INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE sims (
        id TEXT PRIMARY KEY,
        run_id TEXT NOT NULL REFERENCES runs(id),
        gpu_config TEXT NOT NULL,
        replica INTEGER NOT NULL,
        state TEXT NOT NULL,
        state_since TEXT NOT NULL,      -- when `state` last changed: the monitor's clock before a heartbeat
        error TEXT,
        launcher_ref TEXT,
        created_at TEXT NOT NULL,
        started_at TEXT,
        finished_at TEXT,
        last_heartbeat_at TEXT,
        exit_code INTEGER,
        kernels_done INTEGER NOT NULL DEFAULT 0,
        kernels_total INTEGER NOT NULL DEFAULT 0,
        current_kernel TEXT,
        latest TEXT NOT NULL DEFAULT '{}',
        log_tail TEXT NOT NULL DEFAULT '[]',
        core_clock_mhz REAL NOT NULL,
        next_seq INTEGER NOT NULL DEFAULT 0,   -- the next log chunk the parser needs
        parser_state BLOB                      -- pack_state(LogParser.state())
    );
    CREATE INDEX sims_by_run ON sims(run_id, gpu_config, replica);
    CREATE INDEX sims_by_state ON sims(state);
    CREATE TABLE log_chunks (
        sim_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        data BLOB NOT NULL,             -- pack_lines(): zlib of the lines, each ending in a newline
        PRIMARY KEY (sim_id, seq)
    ) WITHOUT ROWID;
    CREATE TABLE kernels (
        sim_id TEXT NOT NULL,
        kernel_index INTEGER NOT NULL,
        kernel_name TEXT NOT NULL,
        kernel_launch_uid INTEGER,
        gpu_sim_cycle INTEGER,
        gpu_sim_insn INTEGER,
        gpu_ipc REAL,
        sim_time_ns REAL,
        stats BLOB NOT NULL,            -- pack_stats(): the full stats map
        PRIMARY KEY (sim_id, kernel_index)
    ) WITHOUT ROWID;
    CREATE TABLE files (
        sim_id TEXT NOT NULL,
        name TEXT NOT NULL,
        size INTEGER NOT NULL,
        content_type TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (sim_id, name)
    ) WITHOUT ROWID;
    CREATE TABLE step_timelines (
        sim_id TEXT PRIMARY KEY,
        simulated BLOB NOT NULL,
        compare BLOB
    );
    """,
]


@dataclass(slots=True)
class _PendingChunk:
    sim_id: str
    seq: int
    lines: list[str]
    packed: bytes  # pack_lines(lines)
    done: asyncio.Future


class NotFound(Exception):
    """An id names nothing; the message is the API's `detail`."""


def new_id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(6)}"


def iso(dt: datetime | None) -> str | None:
    """ISO 8601 UTC with a `Z` and fixed microseconds, so stored times also sort as text."""
    if dt is None:
        return None
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def pack(obj: Any) -> bytes:
    return zlib.compress(json.dumps(obj, allow_nan=True, separators=(",", ":")).encode(), 1)


def unpack(blob: bytes | None) -> Any:
    return None if blob is None else json.loads(zlib.decompress(blob))


def pack_stats(stats: dict[str, float | str]) -> bytes:
    """A kernel's full stats map (1,000-3,000 keys), compressed. Pickled rather than JSON: the
    map is written on the ingest hot path, and pickle is several times cheaper both ways."""
    return zlib.compress(pickle.dumps(stats, protocol=5), 1)


def unpack_stats(blob: bytes) -> dict[str, float | str]:
    return pickle.loads(zlib.decompress(blob))


def pack_lines(lines: list[str]) -> bytes:
    """A chunk as stored: every line ending in a newline (so the log download is a plain
    concatenation, and an empty chunk stays empty), compressed."""
    text = "\n".join(lines) + "\n" if lines else ""
    return zlib.compress(text.encode("utf-8", "surrogatepass"), 1)


def pack_state(state: dict) -> bytes:
    """A parser's state, saved with every group of chunks: pickle of plain dicts, lists, strings
    and floats (several times cheaper than JSON on this hot path, and stable across versions)."""
    return pickle.dumps(state, protocol=5)


def unpack_state(blob: bytes | None) -> dict | None:
    return None if blob is None else pickle.loads(blob)


def unpack_lines(blob: bytes) -> list[str]:
    return zlib.decompress(blob).decode("utf-8", "surrogatepass").split("\n")[:-1]


def _sim_from_row(row: aiosqlite.Row) -> SimSummary:
    return SimSummary(
        id=row["id"],
        run_id=row["run_id"],
        gpu_config=row["gpu_config"],
        replica=row["replica"],
        state=row["state"],
        error=row["error"],
        launcher_ref=row["launcher_ref"],
        created_at=row["created_at"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        last_heartbeat_at=row["last_heartbeat_at"],
        exit_code=row["exit_code"],
        kernels_done=row["kernels_done"],
        kernels_total=row["kernels_total"],
        current_kernel=row["current_kernel"],
        latest=SimMetrics.model_validate_json(row["latest"]),
        log_tail=json.loads(row["log_tail"]),
    )


def _kernel_from_row(row: aiosqlite.Row, with_stats: bool) -> KernelStat:
    return KernelStat(
        sim_id=row["sim_id"],
        kernel_index=row["kernel_index"],
        kernel_name=row["kernel_name"],
        kernel_launch_uid=row["kernel_launch_uid"],
        gpu_sim_cycle=row["gpu_sim_cycle"],
        gpu_sim_insn=row["gpu_sim_insn"],
        gpu_ipc=row["gpu_ipc"],
        sim_time_ns=row["sim_time_ns"],
        stats=unpack_stats(row["stats"]) if with_stats else {},
    )


class Store:
    def __init__(self, path: Path, broker: Broker | None = None) -> None:
        self.path = path
        self.broker = broker or Broker()
        self.lock = asyncio.Lock()
        self._w: aiosqlite.Connection | None = None  # the one writer
        self._r: aiosqlite.Connection | None = None  # reads (WAL: never blocked by the writer)
        # sim_id -> (next_seq, parser): saves rebuilding a parser from its saved state per chunk
        self._parsers: dict[str, tuple[int, LogParser]] = {}
        self._log_queue: list[_PendingChunk] = []
        self._log_writer: asyncio.Task | None = None

    # --- lifecycle ---------------------------------------------------------------------------

    async def open(self) -> Store:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._w = await self._connect()
        await self._migrate()
        self._r = await self._connect()
        return self

    async def _connect(self) -> aiosqlite.Connection:
        conn = await aiosqlite.connect(self.path)
        conn.row_factory = aiosqlite.Row
        await conn.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode: a commit survives a crash of this process; only power loss can
        # lose the last transactions.
        await conn.execute("PRAGMA synchronous=NORMAL")
        await conn.execute("PRAGMA busy_timeout=10000")
        await conn.execute("PRAGMA foreign_keys=ON")
        return conn

    async def _migrate(self) -> None:
        assert self._w is not None
        async with self._w.execute("PRAGMA user_version") as cur:
            (version,) = await cur.fetchone()
        if version > len(MIGRATIONS):
            raise RuntimeError(
                f"{self.path} has schema version {version}, newer than this Cascade ({len(MIGRATIONS)})"
            )
        for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
            await self._w.executescript(f"BEGIN; {script}; PRAGMA user_version={number}; COMMIT;")

    async def close(self) -> None:
        for conn in (self._r, self._w):
            if conn is not None:
                await conn.close()
        self._r = self._w = None

    async def schema_version(self) -> int:
        async with self.r.execute("PRAGMA user_version") as cur:
            return (await cur.fetchone())[0]

    @property
    def w(self) -> aiosqlite.Connection:
        assert self._w is not None, "store is not open"
        return self._w

    @property
    def r(self) -> aiosqlite.Connection:
        assert self._r is not None, "store is not open"
        return self._r

    def _publish(self, run_id: str, events: Iterable[Any]) -> None:
        if self.broker.has_subscribers(run_id):
            self.broker.publish(run_id, [sse_frame(e) for e in events])

    # --- meta --------------------------------------------------------------------------------

    async def get_meta(self, key: str) -> str | None:
        async with self.r.execute("SELECT value FROM meta WHERE key=?", (key,)) as cur:
            row = await cur.fetchone()
        return None if row is None else row[0]

    async def set_meta(self, key: str, value: str) -> None:
        async with self.lock:
            await self.w.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))
            await self.w.commit()

    # --- traces ------------------------------------------------------------------------------

    async def put_trace(self, detail: TraceDetail) -> None:
        """Insert or replace a trace (ingestion registers and updates traces through this)."""
        async with self.lock:
            await self.w.execute(
                "INSERT OR REPLACE INTO traces(id, created_at, doc) VALUES (?, ?, ?)",
                (detail.id, iso(detail.created_at), detail.model_dump_json()),
            )
            await self.w.commit()

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

    # --- runs and sims -----------------------------------------------------------------------

    async def create_run(
        self,
        trace: TraceDetail,
        entries: list[RunEntry],
        configs: dict[str, GpuConfig],
        *,
        sample: bool = False,
        replay: bool = False,
    ) -> RunDetail:
        """A run and its sims, every sim `pending`; one sim per replica of each entry."""
        run_id = new_id("run")
        now = iso(utcnow())
        kernels_total = trace.kernel_count or len(trace.kernels)
        async with self.lock:
            await self.w.execute(
                "INSERT INTO runs(id, trace_id, created_at, entries, sample, replay) VALUES (?,?,?,?,?,?)",
                (run_id, trace.id, now, json.dumps([e.model_dump() for e in entries]), sample, replay),
            )
            await self.w.executemany(
                "INSERT INTO sims(id, run_id, gpu_config, replica, state, state_since, created_at,"
                " kernels_total, core_clock_mhz) VALUES (?,?,?,?,'pending',?,?,?,?)",
                [
                    (new_id("sim"), run_id, e.gpu_config, replica, now, now, kernels_total,
                     configs[e.gpu_config].core_clock_mhz)
                    for e in entries
                    for replica in range(e.count)
                ],
            )
            await self.w.commit()
        detail = await self.get_run(run_id)
        assert detail is not None
        return detail

    async def _run_row(self, conn: aiosqlite.Connection, run_id: str) -> aiosqlite.Row | None:
        async with conn.execute("SELECT * FROM runs WHERE id=?", (run_id,)) as cur:
            return await cur.fetchone()

    async def _sims_of(self, conn: aiosqlite.Connection, run_id: str) -> list[SimSummary]:
        async with conn.execute(
            "SELECT * FROM sims WHERE run_id=? ORDER BY gpu_config, replica", (run_id,)
        ) as cur:
            return [_sim_from_row(row) for row in await cur.fetchall()]

    @staticmethod
    def _summary(row: aiosqlite.Row, states: list[str]) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for state in states:
            counts[state] = counts.get(state, 0) + 1
        return dict(
            id=row["id"],
            trace_id=row["trace_id"],
            created_at=row["created_at"],
            state=run_state(states),
            entries=json.loads(row["entries"]),
            sim_counts=counts,
            sample=bool(row["sample"]),
            replay=bool(row["replay"]),
        )

    async def get_run(self, run_id: str, conn: aiosqlite.Connection | None = None) -> RunDetail | None:
        conn = conn or self.r
        row = await self._run_row(conn, run_id)
        if row is None:
            return None
        sims = await self._sims_of(conn, run_id)
        return RunDetail(
            **self._summary(row, [s.state for s in sims]),
            trace=await self._trace_summary(row["trace_id"]),
            sims=sims,
        )

    async def require_run(self, run_id: str) -> RunDetail:
        run = await self.get_run(run_id)
        if run is None:
            raise NotFound(f"run {run_id} not found")
        return run

    async def list_runs(self) -> list[RunSummary]:
        async with self.r.execute("SELECT * FROM runs ORDER BY created_at DESC, id") as cur:
            runs = await cur.fetchall()
        async with self.r.execute("SELECT run_id, state FROM sims") as cur:
            states: dict[str, list[str]] = {}
            for run_id, state in await cur.fetchall():
                states.setdefault(run_id, []).append(state)
        return [RunSummary(**self._summary(row, states.get(row["id"], []))) for row in runs]

    async def get_sim(self, sim_id: str, conn: aiosqlite.Connection | None = None) -> SimSummary | None:
        async with (conn or self.r).execute("SELECT * FROM sims WHERE id=?", (sim_id,)) as cur:
            row = await cur.fetchone()
        return None if row is None else _sim_from_row(row)

    async def require_sim(self, sim_id: str) -> SimSummary:
        sim = await self.get_sim(sim_id)
        if sim is None:
            raise NotFound(f"sim {sim_id} not found")
        return sim

    async def sims_in_states(self, states: Iterable[str]) -> list[tuple[SimSummary, str]]:
        """(sim, trace_id) for every sim in one of `states` (launchers resume these)."""
        states = list(states)
        marks = ",".join("?" * len(states))
        async with self.r.execute(
            f"SELECT sims.*, runs.trace_id AS trace_id FROM sims JOIN runs ON runs.id = sims.run_id"
            f" WHERE sims.state IN ({marks}) ORDER BY sims.created_at, sims.gpu_config, sims.replica",
            states,
        ) as cur:
            return [(_sim_from_row(row), row["trace_id"]) for row in await cur.fetchall()]

    # --- sim state changes (heartbeats, launchers, the monitor, cancel) ----------------------

    async def _update_sim(self, sim_id: str, **fields: Any) -> SimSummary:
        """Within the writer lock: update columns and return the sim as it now is."""
        sets = ", ".join(f"{name}=?" for name in fields)
        await self.w.execute(f"UPDATE sims SET {sets} WHERE id=?", (*fields.values(), sim_id))
        sim = await self.get_sim(sim_id, self.w)
        assert sim is not None
        return sim

    @staticmethod
    def _move(sim: SimSummary, target: str, now: str, **fields: Any) -> dict[str, Any]:
        """Column values for moving `sim` to `target` (caller checked the transition)."""
        fields = dict(state=target, state_since=now, **fields)
        if target in TERMINAL_SIM_STATES:
            fields["finished_at"] = now
        return fields

    async def heartbeat(self, sim_id: str, beat: Heartbeat) -> HeartbeatAck:
        async with self.lock:
            sim = await self.get_sim(sim_id, self.w)
            if sim is None:
                raise NotFound(f"sim {sim_id} not found")
            if sim.state in TERMINAL_SIM_STATES:
                # A finished sim keeps its final state; a cancelled one is told to stop.
                return HeartbeatAck(state=sim.state, cancel=sim.state == "cancelled")
            now = iso(utcnow())
            fields: dict[str, Any] = {"last_heartbeat_at": now}
            if beat.state != sim.state and can_transition(sim.state, beat.state):
                fields = self._move(sim, beat.state, now, **fields)
            if fields.get("state", sim.state) == "running" and beat.state == "running":
                fields["error"] = None  # a running heartbeat clears an earlier `lost` reason
                if sim.started_at is None:
                    fields["started_at"] = now
            if fields.get("state") in TERMINAL_SIM_STATES:
                fields["exit_code"] = beat.exit_code
                fields["error"] = beat.error
            updated = await self._update_sim(sim_id, **fields)
            await self.w.commit()
            self._publish(updated.run_id, [SimEvent(sim=updated)])
            return HeartbeatAck(state=updated.state, cancel=updated.state == "cancelled")

    async def mark_launching(self, sim_id: str, launcher_ref: str | None) -> None:
        """The launcher started (or is starting) this sim. Pending -> launching; a later call
        only records the `launcher_ref`."""
        async with self.lock:
            sim = await self.get_sim(sim_id, self.w)
            if sim is None or sim.state in TERMINAL_SIM_STATES:
                return
            fields: dict[str, Any] = {}
            if launcher_ref is not None:
                fields["launcher_ref"] = launcher_ref
            if sim.state == "pending":
                fields = self._move(sim, "launching", iso(utcnow()), **fields)
            if not fields:
                return
            updated = await self._update_sim(sim_id, **fields)
            await self.w.commit()
            self._publish(updated.run_id, [SimEvent(sim=updated)])

    async def mark_failed(self, sim_id: str, error: str, exit_code: int | None = None) -> None:
        """A launcher saw the sim's process end (or fail to start) without a final heartbeat."""
        async with self.lock:
            sim = await self.get_sim(sim_id, self.w)
            if sim is None or not can_transition(sim.state, "failed"):
                return
            fields = self._move(sim, "failed", iso(utcnow()), error=error, exit_code=exit_code)
            updated = await self._update_sim(sim_id, **fields)
            await self.w.commit()
            self._publish(updated.run_id, [SimEvent(sim=updated)])

    async def cancel_run(self, run_id: str) -> tuple[RunDetail, list[SimSummary]]:
        """Every unfinished sim -> cancelled. Returns the run and the sims that were cancelled."""
        async with self.lock:
            run = await self.get_run(run_id, self.w)
            if run is None:
                raise NotFound(f"run {run_id} not found")
            now = iso(utcnow())
            cancelled = []
            for sim in run.sims:
                if can_transition(sim.state, "cancelled"):
                    fields = self._move(sim, "cancelled", now)
                    cancelled.append(await self._update_sim(sim.id, **fields))
            if not cancelled:
                return run, []
            await self.w.commit()
            self._publish(run_id, [SimEvent(sim=s) for s in cancelled])
            run = await self.get_run(run_id, self.w)
            assert run is not None
            return run, cancelled

    async def expire_heartbeats(self, timeout_s: float, now: datetime | None = None,
                                awake_since: datetime | None = None) -> list[SimSummary]:
        """The heartbeat monitor: `lost` after `timeout_s` without a heartbeat, `failed` after 10x.
        Silence before `awake_since` (when the server last started running again) is not
        counted: the server was not there to hear the heartbeats (monitor.py)."""
        now_dt = now or utcnow()
        awake = iso(awake_since) or ""
        lost_before = iso(now_dt - timedelta(seconds=timeout_s))
        failed_before = iso(now_dt - timedelta(seconds=10 * timeout_s))
        changed: list[SimSummary] = []
        async with self.lock:
            async with self.w.execute(
                "SELECT * FROM sims WHERE state IN ('launching','running','lost')"
                " AND COALESCE(last_heartbeat_at, state_since) < ?",
                (lost_before,),
            ) as cur:
                rows = await cur.fetchall()
            stamp = iso(now_dt)
            for row in rows:
                sim = _sim_from_row(row)
                silent_since = max(row["last_heartbeat_at"] or row["state_since"], awake)
                if silent_since >= lost_before:
                    continue
                if sim.state == "lost":
                    if silent_since >= failed_before:
                        continue
                    fields = self._move(
                        sim, "failed", stamp,
                        error=f"no heartbeat for {_seconds(10 * timeout_s)}: the sim was lost and did not come back",
                    )
                else:
                    fields = self._move(sim, "lost", stamp, error=f"no heartbeat for {_seconds(timeout_s)}")
                    fields["state_since"] = silent_since  # keep the clock for the 10x rule
                changed.append(await self._update_sim(sim.id, **fields))
            if changed:
                await self.w.commit()
                by_run: dict[str, list[SimEvent]] = {}
                for sim in changed:
                    by_run.setdefault(sim.run_id, []).append(SimEvent(sim=sim))
                for run_id, events in by_run.items():
                    self._publish(run_id, events)
        return changed

    # --- logs and kernels --------------------------------------------------------------------

    async def append_log(self, sim_id: str, seq: int, lines: list[str]) -> None:
        """Store a chunk (the first one per seq wins) and parse every chunk now in order.

        Chunks are committed in groups: whatever arrives while a group is being written goes
        into the next one, so many simulators cost one transaction, not one each. This returns
        once the chunk's group is committed.
        """
        done = asyncio.get_running_loop().create_future()
        # Packed before it joins a group: the writer holds the lock for as little work as it can.
        self._log_queue.append(_PendingChunk(sim_id, seq, lines, pack_lines(lines), done))
        if self._log_writer is None or self._log_writer.done():
            self._log_writer = asyncio.create_task(self._write_log_groups())
        await done

    async def _write_log_groups(self) -> None:
        while self._log_queue:
            async with self.lock:
                group, self._log_queue = self._log_queue, []
                try:
                    events_by_run = await self._write_log_group(group)
                except BaseException as exc:
                    for sim_id in {p.sim_id for p in group}:
                        self._parsers.pop(sim_id, None)  # in-memory parsers may be ahead of the database
                    await self.w.rollback()
                    for pending in group:
                        if not pending.done.done():
                            pending.done.set_exception(exc if isinstance(exc, Exception) else RuntimeError("cancelled"))
                    if not isinstance(exc, Exception):
                        raise
                    continue
                for run_id, events in events_by_run.items():
                    self._publish(run_id, events)
            for pending in group:
                if not pending.done.done():
                    pending.done.set_result(None)

    async def _write_log_group(self, group: list[_PendingChunk]) -> dict[str, list[Any]]:
        sim_ids = list(dict.fromkeys(p.sim_id for p in group))
        marks = ",".join("?" * len(sim_ids))
        async with self.w.execute(f"SELECT * FROM sims WHERE id IN ({marks})", sim_ids) as cur:
            rows = {row["id"]: row for row in await cur.fetchall()}
        # Chunks stored earlier that still wait for a gap to fill (usually none).
        async with self.w.execute(
            f"SELECT log_chunks.sim_id, log_chunks.seq FROM log_chunks JOIN sims ON sims.id = log_chunks.sim_id"
            f" WHERE log_chunks.sim_id IN ({marks}) AND log_chunks.seq >= sims.next_seq",
            sim_ids,
        ) as cur:
            stored = {(sim_id, seq) for sim_id, seq in await cur.fetchall()}

        fresh: dict[str, dict[int, _PendingChunk]] = {}
        for pending in group:
            row = rows.get(pending.sim_id)
            if row is None:
                pending.done.set_exception(NotFound(f"sim {pending.sim_id} not found"))
                continue
            key = (pending.sim_id, pending.seq)
            chunks = fresh.setdefault(pending.sim_id, {})
            if pending.seq < row["next_seq"] or key in stored or pending.seq in chunks:
                continue  # a retry: the first chunk per seq wins
            chunks[pending.seq] = pending
        await self.w.executemany(
            "INSERT INTO log_chunks(sim_id, seq, data) VALUES (?,?,?)",
            [(sim_id, seq, p.packed) for sim_id, chunks in fresh.items() for seq, p in chunks.items()],
        )

        events_by_run: dict[str, list[Any]] = {}
        kernel_rows, sim_updates, parsed = [], [], {}
        for sim_id, chunks in fresh.items():
            row = rows[sim_id]
            next_seq = row["next_seq"]
            if next_seq not in chunks and (sim_id, next_seq) not in stored:
                continue  # early: it waits for the gap to fill
            cached = self._parsers.get(sim_id)
            if cached is not None and cached[0] == next_seq:
                parser = cached[1]
            else:
                parser = LogParser(row["core_clock_mhz"], state=unpack_state(row["parser_state"]))
            # Events are built only for runs someone watches (checked under the lock, so no
            # subscriber can appear before they are published).
            live = self.broker.has_subscribers(row["run_id"])
            base = _sim_from_row(row) if live else None
            events = events_by_run.setdefault(row["run_id"], [])
            while True:
                if next_seq in chunks:
                    lines = chunks[next_seq].lines
                elif (sim_id, next_seq) in stored:
                    lines = await self._stored_chunk(sim_id, next_seq)
                else:
                    break
                kernels = parser.feed(lines)
                next_seq += 1
                if live:
                    events.append(LogEvent(sim_id=sim_id, lines=lines))
                for kernel in kernels:
                    kernel_rows.append((
                        sim_id, kernel.kernel_index, kernel.kernel_name, kernel.kernel_launch_uid,
                        kernel.gpu_sim_cycle, kernel.gpu_sim_insn, kernel.gpu_ipc, kernel.sim_time_ns,
                        pack_stats(kernel.stats),
                    ))
                    if live:
                        events.append(KernelEvent(stat=kernel.to_stat(sim_id)))
                if live:
                    events.append(SimEvent(sim=base.model_copy(update=_progress(parser))))
            progress = _progress(parser)
            sim_updates.append((
                next_seq, pack_state(parser.state()), progress["kernels_done"], progress["current_kernel"],
                progress["latest"].model_dump_json(), json.dumps(progress["log_tail"]), sim_id,
            ))
            parsed[sim_id] = (next_seq, parser)
        if kernel_rows:
            await self.w.executemany("INSERT OR REPLACE INTO kernels VALUES (?,?,?,?,?,?,?,?,?)", kernel_rows)
        if sim_updates:
            await self.w.executemany(
                "UPDATE sims SET next_seq=?, parser_state=?, kernels_done=?, current_kernel=?,"
                " latest=?, log_tail=? WHERE id=?",
                sim_updates,
            )
        await self.w.commit()
        self._parsers.update(parsed)
        return events_by_run

    async def _stored_chunk(self, sim_id: str, seq: int) -> list[str]:
        async with self.w.execute("SELECT data FROM log_chunks WHERE sim_id=? AND seq=?", (sim_id, seq)) as cur:
            (data,) = await cur.fetchone()
        return unpack_lines(data)

    async def iter_log(self, sim_id: str, batch: int = 64) -> AsyncIterator[bytes]:
        """The sim's whole log in seq order, each line ending in a newline, a batch at a time."""
        last = -1
        while True:
            async with self.r.execute(
                "SELECT seq, data FROM log_chunks WHERE sim_id=? AND seq>? ORDER BY seq LIMIT ?",
                (sim_id, last, batch),
            ) as cur:
                rows = await cur.fetchall()
            if not rows:
                return
            yield b"".join(zlib.decompress(data) for _, data in rows)
            last = rows[-1][0]

    async def run_kernels(self, run_id: str, with_stats: bool = False) -> list[KernelStat]:
        """Every finished kernel of the run, by config, replica, then kernel."""
        columns = "kernels.*" if with_stats else (
            "kernels.sim_id, kernel_index, kernel_name, kernel_launch_uid, gpu_sim_cycle,"
            " gpu_sim_insn, gpu_ipc, sim_time_ns, NULL AS stats"
        )
        async with self.r.execute(
            f"SELECT {columns} FROM kernels JOIN sims ON sims.id = kernels.sim_id"
            " WHERE sims.run_id=? ORDER BY sims.gpu_config, sims.replica, kernels.kernel_index",
            (run_id,),
        ) as cur:
            return [_kernel_from_row(row, with_stats) for row in await cur.fetchall()]

    async def sim_kernels(self, sim_id: str) -> list[KernelStat]:
        async with self.r.execute(
            "SELECT * FROM kernels WHERE sim_id=? ORDER BY kernel_index", (sim_id,)
        ) as cur:
            return [_kernel_from_row(row, True) for row in await cur.fetchall()]

    async def snapshot(self, run_id: str) -> SnapshotEvent:
        """Call with `lock` held, then subscribe before releasing it (see module docstring)."""
        run = await self.get_run(run_id, self.w)
        if run is None:
            raise NotFound(f"run {run_id} not found")
        return SnapshotEvent(run=run, kernels=await self.run_kernels(run_id))

    # --- files and step timelines ------------------------------------------------------------

    async def put_file(self, sim_id: str, name: str, size: int, content_type: str) -> SimFile:
        created = utcnow()
        async with self.lock:
            await self.w.execute(
                "INSERT OR REPLACE INTO files(sim_id, name, size, content_type, created_at)"
                " VALUES (?,?,?,?,?)",
                (sim_id, name, size, content_type, iso(created)),
            )
            await self.w.commit()
        return SimFile(name=name, size=size, content_type=content_type, created_at=created)

    async def sim_files(self, sim_id: str) -> list[SimFile]:
        async with self.r.execute(
            "SELECT name, size, content_type, created_at FROM files WHERE sim_id=? ORDER BY name",
            (sim_id,),
        ) as cur:
            return [SimFile(**dict(row)) for row in await cur.fetchall()]

    async def run_files(self, run_id: str) -> list[RunFile]:
        async with self.r.execute(
            "SELECT files.*, sims.gpu_config, sims.replica FROM files JOIN sims ON sims.id = files.sim_id"
            " WHERE sims.run_id=? ORDER BY sims.gpu_config, sims.replica, files.name",
            (run_id,),
        ) as cur:
            return [RunFile(**dict(row)) for row in await cur.fetchall()]

    async def put_step_timeline(self, sim_id: str, upload: StepTimelineUpload) -> None:
        async with self.lock:
            await self.w.execute(
                "INSERT OR REPLACE INTO step_timelines(sim_id, simulated, compare) VALUES (?,?,?)",
                (sim_id, pack(upload.simulated), None if upload.compare is None else pack(upload.compare)),
            )
            await self.w.commit()

    async def run_step_timelines(self, run_id: str) -> list[SimStepTimeline]:
        async with self.r.execute(
            "SELECT step_timelines.*, sims.gpu_config, sims.replica FROM step_timelines"
            " JOIN sims ON sims.id = step_timelines.sim_id WHERE sims.run_id=?"
            " ORDER BY sims.gpu_config, sims.replica",
            (run_id,),
        ) as cur:
            rows = await cur.fetchall()
        return [
            SimStepTimeline(sim_id=row["sim_id"], gpu_config=row["gpu_config"], replica=row["replica"],
                            simulated=unpack(row["simulated"]), compare=unpack(row["compare"]))
            for row in rows
        ]


def _progress(parser: LogParser) -> dict[str, Any]:
    """The parser's view of a sim's progress, as SimSummary fields."""
    return {
        "kernels_done": parser.kernels_done,
        "current_kernel": parser.current_kernel,
        "latest": SimMetrics(**parser.latest),
        "log_tail": list(parser.log_tail),
    }


def _seconds(value: float) -> str:
    return f"{value:g} s"
