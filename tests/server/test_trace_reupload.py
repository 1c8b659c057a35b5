"""A deleted trace's runs stay runs of *that* trace: a trace uploaded later under the same id is
another trace, and is never joined to them (their trace summary, comparison, results, re-run)."""

from __future__ import annotations

import json
from datetime import datetime

import aiosqlite
import httpx

from cascade_server.storage import Store
from cascade_server.storage.codecs import iso
from cascade_server.storage.schema import MIGRATIONS, migrate
from tests.conftest import ready_trace
from tests.helpers import create_run, store_real_timing

from .test_api_manage import finish

TRACE = "tinyformer-step-sm70"


REAL_TIMING = {
    "format": "cascade.real_timing/1",
    "kernels": [{"kernel_id": 1, "kernel_name": "_Z6kernel0v", "duration_ns": 7000.0}],
}


async def run_then_trace_deleted(core, http: httpx.AsyncClient) -> tuple[dict, dict]:
    """A run of the trace that succeeded, then the trace deleted: the run, and its trace's record."""
    run = await create_run(http)
    await finish(core, run, ["succeeded"] * len(run["sims"]))
    assert (await http.delete(f"/api/traces/{TRACE}")).status_code == 204
    return run, (await http.get(f"/api/runs/{run['id']}")).json()["trace"]


async def test_runs_of_a_deleted_trace_are_never_joined_to_a_new_trace_of_the_same_id(core):
    async with core.client() as http:
        run, gone = await run_then_trace_deleted(core, http)

        # Another upload under the same id: another model, other kernels, real timing.
        trace = ready_trace(TRACE, kernels=4, model="someone/else")
        assert (await store_real_timing(core.store, trace, REAL_TIMING)).has_real_timing
        new_run = await create_run(http)

        old = (await http.get(f"/api/runs/{run['id']}")).json()
        assert old["trace"] == gone  # unchanged by the new upload
        assert old["trace"]["state"] == "failed"
        assert old["trace"]["error"].startswith(f"trace {TRACE} was deleted at ")
        assert old["trace"]["error"].endswith("a trace uploaded since under this id is another trace")
        assert (old["trace"]["kernel_count"], old["trace"]["model"]) == (15, None)  # what it was
        assert old["trace"]["has_real_timing"] is False  # its files went with it
        listed = {r["id"]: r for r in (await http.get("/api/runs")).json()}
        assert listed[run["id"]]["trace_id"] == TRACE  # the id it was run on stays

        comparison = (await http.get(f"/api/runs/{run['id']}/comparison")).json()
        assert comparison["has_real_timing"] is False  # not the new trace's real timing
        results = (await http.get(f"/api/runs/{run['id']}/results")).json()
        assert results["trace"] == gone
        assert results["comparison"]["has_real_timing"] is False

        for action in ("rerun", "retry"):
            resp = await http.post(f"/api/runs/{run['id']}/{action}")
            assert resp.status_code == 409
            assert resp.json()["detail"] == (
                f"run {run['id']}'s trace {TRACE} was deleted; the trace now under that id is "
                f"another upload: start a new run on it"
            )

        # The new trace's own runs are joined to it, as always.
        fresh = (await http.get(f"/api/runs/{new_run['id']}")).json()["trace"]
        assert (fresh["state"], fresh["model"], fresh["kernel_count"]) == ("ready", "someone/else", 4)
        assert (await http.get(f"/api/runs/{new_run['id']}/comparison")).json()["has_real_timing"] is True

        # Deleting the new trace later leaves each run with its own trace's record.
        await http.post(f"/api/runs/{new_run['id']}/cancel")
        assert (await http.delete(f"/api/traces/{TRACE}")).status_code == 204
        assert (await http.get(f"/api/runs/{run['id']}")).json()["trace"] == gone
        second = (await http.get(f"/api/runs/{new_run['id']}")).json()["trace"]
        assert (second["model"], second["kernel_count"], second["state"]) == ("someone/else", 4, "failed")


async def test_a_deleted_trace_record_survives_a_restart(core):
    async with core.client() as http:
        run, gone = await run_then_trace_deleted(core, http)
    await core.restart()
    await core.store.traces.put_trace(ready_trace(TRACE, kernels=4))
    async with core.client() as http:
        assert (await http.get(f"/api/runs/{run['id']}")).json()["trace"] == gone


async def test_the_migration_marks_runs_whose_trace_was_already_gone(tmp_path):
    """A database from before deletes kept a record: its runs of a missing trace are marked deleted
    (a trace uploaded later under that id is not theirs); runs of a present trace stay joined."""
    path = tmp_path / "old.db"
    async with aiosqlite.connect(path) as conn:
        for number, script in enumerate(MIGRATIONS[:2], start=1):
            await conn.executescript(f"BEGIN; {script}; PRAGMA user_version={number}; COMMIT;")
        await conn.execute("INSERT INTO traces(id, created_at, doc) VALUES ('here', 'x', '{}')")
        for run_id, trace_id in (("run-gone", "gone"), ("run-here", "here")):
            await conn.execute(
                "INSERT INTO runs(id, trace_id, created_at, entries) VALUES (?, ?, 'x', '[]')",
                (run_id, trace_id),
            )
        await conn.commit()
        await migrate(conn, path)
        async with conn.execute("SELECT id, trace_deleted_at IS NOT NULL FROM runs ORDER BY id") as cur:
            assert await cur.fetchall() == [("run-gone", 1), ("run-here", 0)]


async def test_the_migration_records_only_what_is_known_of_traces_deleted_before_it(tmp_path):
    """Runs from before deletes kept a record: one whose trace row is gone, one whose trace was
    deleted and uploaded again (the trace row is newer than the run: not its trace). Both show
    their trace as deleted at an unknown time, with the arch of their configs and no made-up
    dates; a run of a trace older than it stays joined to it."""
    path = tmp_path / "old.db"
    async with aiosqlite.connect(path) as conn:
        for number, script in enumerate(MIGRATIONS[:2], start=1):
            await conn.executescript(f"BEGIN; {script}; PRAGMA user_version={number}; COMMIT;")
        for trace_id, created in (
            ("again", "2026-03-01T00:00:00.000000Z"),
            ("here", "2026-01-01T00:00:00.000000Z"),
        ):
            when = datetime.fromisoformat(created)
            doc = ready_trace(trace_id).model_copy(update={"created_at": when, "updated_at": when})
            await conn.execute(
                "INSERT INTO traces(id, created_at, doc) VALUES (?, ?, ?)",
                (trace_id, created, doc.model_dump_json()),
            )
        entries = json.dumps([{"gpu_config": "SM7_QV100", "count": 1}])
        for run_id, trace_id in (("run-gone", "gone"), ("run-again", "again"), ("run-here", "here")):
            await conn.execute(
                "INSERT INTO runs(id, trace_id, created_at, entries) VALUES (?, ?, ?, ?)",
                (run_id, trace_id, "2026-02-01T00:00:00.000000Z", entries),
            )
        await conn.commit()
    store = await Store(path).open()
    try:
        for run_id, trace_id in (("run-gone", "gone"), ("run-again", "again")):
            trace = (await store.runs.get_run(run_id)).trace
            assert (trace.id, trace.state, trace.trace_gpu_arch) == (trace_id, "failed", "sm_70")
            assert trace.error == (
                f"trace {trace_id} was deleted before this server kept records of deleted "
                "traces (when is not known); a trace uploaded since under this id is another trace"
            )
            assert (
                iso(trace.created_at) == iso(trace.updated_at) == "2026-02-01T00:00:00.000000Z"
            )  # the run's
            assert await store.traces.live_trace_of_run(run_id) is None
        here = (await store.runs.get_run("run-here")).trace
        assert (here.id, here.state, here.error) == ("here", "ready", None)
    finally:
        await store.close()
