"""The database schema: one migration script per version, applied in order on open."""

from __future__ import annotations

from pathlib import Path

import aiosqlite

# runs.trace_deleted_at of a run whose trace was deleted before Cascade kept records of deleted
# traces: when is not known.
DELETED_AT_UNKNOWN = "unknown"

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
        parser_state BLOB                      -- pack_state(LogParser.state()), see migration 8
    );
    CREATE INDEX sims_by_run ON sims(run_id, gpu_config, replica);
    CREATE INDEX sims_by_state ON sims(state);
    CREATE TABLE log_chunks (
        sim_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        data BLOB NOT NULL,             -- pack_lines(): the lines, each ending in a newline, compressed
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
    # 2: what a scheduler (Slurm) says of a sim's job: "PENDING (Resources)", "RUNNING"
    "ALTER TABLE sims ADD COLUMN launcher_state TEXT",
    # 3: a run whose trace was deleted keeps that trace's record (trace_deleted_at set, the
    # TraceSummary it had in trace_record), so a trace uploaded later under the same id is never
    # taken for its trace. Runs whose trace was already gone are marked deleted, with no record.
    """
    ALTER TABLE runs ADD COLUMN trace_deleted_at TEXT;
    ALTER TABLE runs ADD COLUMN trace_record TEXT;
    UPDATE runs SET trace_deleted_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
        WHERE trace_id NOT IN (SELECT id FROM traces);
    """,
    # 4: the journal of trace deletes under way: a row is written in the transaction that reserves
    # the trace, before any object or file goes, and removed once the bucket objects, the trace
    # row and the mirror are all gone; a delete a crash interrupted is finished from it on startup.
    "CREATE TABLE trace_deletes (trace_id TEXT PRIMARY KEY, started_at TEXT NOT NULL)",
    # 5: what 3 got wrong about runs from before deletes kept a record. Their trace may have been
    # deleted and uploaded again (a trace created after the run is not the run's trace), and when
    # their trace was deleted is not known (3 wrote its own time): such runs are marked with
    # DELETED_AT_UNKNOWN and no record, and show only what is known of their trace.
    f"""
    UPDATE runs SET trace_deleted_at = '{DELETED_AT_UNKNOWN}'
        WHERE trace_record IS NULL AND (
            trace_deleted_at IS NOT NULL
            OR trace_id NOT IN (SELECT id FROM traces)
            OR (sample = 0 AND EXISTS (SELECT 1 FROM traces WHERE traces.id = runs.trace_id
                                       AND julianday(traces.created_at) > julianday(runs.created_at))));
    """,
    # 6: sharded sims (issue 23; storage/shard_columns.py). A shard owns kernels shard_first..shard_last
    # (0-based trace positions, inclusive; NULL last: to the end) and first simulates
    # shard_warmup kernels before them; its kernels are stored at their trace positions. A failed
    # sim retried in place names the sim that replaced it (retried_by) and is no longer one of
    # its run's sims; the new one names it (retry_of). Sims of the whole trace keep the defaults.
    """
    ALTER TABLE sims ADD COLUMN shard_index INTEGER;
    ALTER TABLE sims ADD COLUMN shard_count INTEGER;
    ALTER TABLE sims ADD COLUMN shard_first INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sims ADD COLUMN shard_last INTEGER;
    ALTER TABLE sims ADD COLUMN shard_warmup INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sims ADD COLUMN retry_of TEXT;
    ALTER TABLE sims ADD COLUMN retried_by TEXT;
    """,
    # 7: config variants (cascade_core/variants.py): a sim's simulator options as JSON and its label;
    # NULL for sims without options (their label is their gpu_config).
    """
    ALTER TABLE sims ADD COLUMN options TEXT;
    ALTER TABLE sims ADD COLUMN label TEXT;
    """,
    # 8: the parser state is saved every few chunks (ingest/parsing.py): the chunk it stands
    # before (every state saved before stood at next_seq; a new sim's, none, at 0).
    """
    ALTER TABLE sims ADD COLUMN parser_state_seq INTEGER NOT NULL DEFAULT 0;
    UPDATE sims SET parser_state_seq = next_seq;
    """,
    # 9: going on past a kernel the simulator fails on (issue 30). A sim's run-entry choices
    # (NULL: the defaults, "continue" and 1 warm-up kernel before a restart), how many of its
    # kernels failed, and a failed kernel's row: the simulator's reason, and no results.
    """
    ALTER TABLE sims ADD COLUMN on_kernel_failure TEXT;
    ALTER TABLE sims ADD COLUMN warmup_kernels INTEGER;
    ALTER TABLE sims ADD COLUMN kernels_failed INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE kernels ADD COLUMN failed TEXT;
    """,
    # 10: kernel sampling (issue 33). A sampled sim's sample (cascade_core/sampling.SimSample as
    # JSON: its representatives, whose numbers each other kernel takes, and its figures); a
    # kernel row estimated from a representative names its trace position. And the kernels of the
    # sim's trace, which bound the positions its log may name (NULL for older sims: no bound).
    """
    ALTER TABLE sims ADD COLUMN sampling TEXT;
    ALTER TABLE sims ADD COLUMN trace_kernels INTEGER;
    ALTER TABLE kernels ADD COLUMN estimated_from INTEGER;
    """,
    # 11: a trace's real kernel times (issue 32), read from its real_timing.json once, when the
    # trace becomes ready (traces/real_timing_file.py), not at every `/comparison`: row
    # `position` of `/comparison` is the file's kernel at that place in kernel-id order. A
    # trace whose has_real_timing is true and that has no rows here (ready before this version)
    # gets them when the server starts (storage/real_timing.py, traces/scanner.py).
    """
    CREATE TABLE real_timing (
        trace_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        kernel_id REAL NOT NULL,
        kernel_name TEXT,
        duration_ns REAL,
        PRIMARY KEY (trace_id, position)
    ) WITHOUT ROWID;
    """,
    # 12: the runs of log chunks that never arrived (issue 32), as JSON [[first, last], ...]; NULL
    # none. The log keeps exactly what the simulator sent: a closed gap's chunks are stored empty
    # and the sim says which they were (ingest/gaps.py), no longer a line of the server's in the log.
    "ALTER TABLE sims ADD COLUMN missing_log_chunks TEXT",
    # 13: power (issue 34). A sim that simulates power (NULL: no), and its kernels' power from
    # AccelWattch, as the worker's notes in its log give it (cascade_core/log_notes.py): a row of
    # its own, since a kernel's power arrives after its stats; components as JSON {name: W}.
    """
    ALTER TABLE sims ADD COLUMN power INTEGER;
    CREATE TABLE kernel_power (
        sim_id TEXT NOT NULL,
        kernel_index INTEGER NOT NULL,
        avg_w REAL NOT NULL,
        max_w REAL NOT NULL,
        min_w REAL NOT NULL,
        components TEXT NOT NULL,
        PRIMARY KEY (sim_id, kernel_index)
    ) WITHOUT ROWID;
    """,
]


class DatabaseUnusable(Exception):
    """The database cannot be used as it is: the message says why and what to do, in one line."""


def schema_problem(path: Path, version: int, can_upgrade: bool = True) -> str | None:
    """Why a database at schema `version` cannot be served, or None. Pure."""
    if version > len(MIGRATIONS):
        return (
            f"{path} has schema version {version}, newer than this Cascade ({len(MIGRATIONS)}): "
            "run the Cascade that wrote it, or a newer one"
        )
    if version < len(MIGRATIONS) and not can_upgrade:
        return f"{path} needs its schema upgraded, and its disk is full: free some space and start again"
    return None


async def migrate(conn: aiosqlite.Connection, path: Path) -> None:
    """Bring the database at `path` (open on `conn`) up to the newest schema, one committed
    script per version; refuse a database from a newer Cascade."""
    async with conn.execute("PRAGMA user_version") as cur:
        row = await cur.fetchone()
    version = 0 if row is None else row[0]
    if problem := schema_problem(path, version):
        raise DatabaseUnusable(problem)
    for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
        await conn.executescript(f"BEGIN; {script}; PRAGMA user_version={number}; COMMIT;")
