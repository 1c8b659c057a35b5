"""Issue 13: delete a finished run or an unused trace, re-run a run, retry its failed sims, and
`limit` / `state` on the runs and traces lists; every status code on a real server."""

from __future__ import annotations

import asyncio

import pytest

from cascade_core.models import RunEntry, StepTimelineUpload
from cascade_core.s3_endpoint import S3Info, make_client
from cascade_server.appkeys import GPU_CONFIGS_KEY
from cascade_server.storage import NotFound
from cascade_server.traces.ingest import TRACE_SCANNER_KEY
from tests.conftest import ready_trace
from tests.helpers import create_run

MANAGE_ROUTES = [
    ("DELETE", "/api/runs/run-000000000000"),
    ("DELETE", "/api/traces/x"),
    ("POST", "/api/runs/run-000000000000/rerun"),
    ("POST", "/api/runs/run-000000000000/retry"),
]


async def finish(server, run: dict, states: list[str]) -> None:
    """Drive the run's sims to `states` (in sim order) with real heartbeats."""
    async with server.client() as http:
        for sim, state in zip(run["sims"], states):
            if state == "cancelled":
                continue
            resp = await http.post(f"/api/sims/{sim['id']}/heartbeat", json={"state": state, "exit_code": 0})
            assert resp.status_code == 200, resp.text
        if "cancelled" in states:
            await http.post(f"/api/runs/{run['id']}/cancel")


@pytest.mark.parametrize(("method", "path"), MANAGE_ROUTES)
async def test_manage_routes_need_the_token(server, method, path):
    async with server.client(token=None) as http:
        resp = await http.request(method, path)
    assert resp.status_code == 401 and resp.headers["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize(("method", "path"), MANAGE_ROUTES)
async def test_unknown_ids_are_404_with_a_sentence(core, method, path):
    async with core.client() as http:
        resp = await http.request(method, path)
    assert resp.status_code == 404
    assert resp.json()["detail"] in ("run run-000000000000 not found", "trace x not found")


async def test_delete_run_removes_its_rows_and_files(core):
    settings = core.settings
    async with core.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 2}])
        sim = run["sims"][0]["id"]
        resp = await http.delete(f"/api/runs/{run['id']}")
        assert resp.status_code == 409
        assert resp.json()["detail"] == (
            f"run {run['id']} is active: cancel it first (POST /api/runs/{run['id']}/cancel)"
        )

        # Output of every kind: a log chunk with a kernel, an uploaded file, a step timeline.
        assert (
            await http.post(f"/api/sims/{sim}/logs", json={"seq": 0, "lines": ["hello"]})
        ).status_code == 204
        assert (await http.put(f"/api/sims/{sim}/files/out.txt", content=b"data")).status_code == 200
        timeline = {"simulated": {"steps": [], "summary": {}}, "compare": None}
        assert (await http.post(f"/api/sims/{sim}/step-timeline", json=timeline)).status_code == 204
        settings.workers_dir.mkdir(parents=True, exist_ok=True)
        (settings.workers_dir / f"{sim}.log").write_text("worker output\n")
        assert (settings.files_dir / sim / "out.txt").is_file()
        await finish(core, run, ["succeeded", "failed"])

        other = await create_run(http)  # another run of the same trace is left alone
        resp = await http.delete(f"/api/runs/{run['id']}")
        assert (resp.status_code, resp.content) == (204, b"")
        assert (await http.get(f"/api/runs/{run['id']}")).status_code == 404
        assert (await http.get(f"/api/sims/{sim}/log")).status_code == 404
        assert (await http.get(f"/api/sims/{sim}/files")).status_code == 404
        assert not (settings.files_dir / sim).exists()
        assert not (settings.workers_dir / f"{sim}.log").exists()
        assert [r["id"] for r in (await http.get("/api/runs")).json()] == [other["id"]]
        for table in ("sims", "log_chunks", "kernels", "files", "step_timelines"):
            async with core.store.db.r.execute(
                f"SELECT COUNT(*) FROM {table} WHERE {'id' if table == 'sims' else 'sim_id'}=?", (sim,)
            ) as cur:
                assert (await cur.fetchone())[0] == 0, table
        # Deleting again: it is gone.
        resp = await http.delete(f"/api/runs/{run['id']}")
        assert (resp.status_code, resp.json()["detail"]) == (404, f"run {run['id']} not found")


async def test_rerun_starts_a_new_run_with_the_same_entries(core):
    async with core.client() as http:
        entries = [{"gpu_config": "SM7_QV100", "count": 2}, {"gpu_config": "SM7_TITANV", "count": 1}]
        run = await create_run(http, entries)
        resp = await http.post(f"/api/runs/{run['id']}/rerun")  # also while the first is active
        assert resp.status_code == 201, resp.text
        again = resp.json()
        assert again["id"] != run["id"] and again["trace_id"] == run["trace_id"]
        assert again["entries"] == entries and len(again["sims"]) == 3
        assert {s["state"] for s in again["sims"]} <= {"pending", "launching"}
        assert {s["id"] for s in again["sims"]}.isdisjoint(s["id"] for s in run["sims"])
        assert len((await http.get("/api/runs")).json()) == 2


async def test_retry_runs_the_failed_sims_again_in_a_new_run(core):
    async with core.client() as http:
        entries = [{"gpu_config": "SM7_QV100", "count": 3}, {"gpu_config": "SM7_TITANV", "count": 2}]
        run = await create_run(http, entries)
        resp = await http.post(f"/api/runs/{run['id']}/retry")
        assert (resp.status_code, resp.json()["detail"]) == (
            409,
            f"run {run['id']} has no failed sims to retry",
        )
        # QV100: succeeded, failed, failed; TITANV: failed, cancelled (not retried: stopped on purpose)
        await finish(core, run, ["succeeded", "failed", "failed", "failed", "cancelled"])
        assert (await http.get(f"/api/runs/{run['id']}")).json()["state"] == "partial"
        resp = await http.post(f"/api/runs/{run['id']}/retry")
        assert resp.status_code == 201, resp.text
        retried = resp.json()
        assert retried["trace_id"] == run["trace_id"]
        assert retried["entries"] == [
            {"gpu_config": "SM7_QV100", "count": 2},
            {"gpu_config": "SM7_TITANV", "count": 1},
        ]
        assert [(s["gpu_config"], s["replica"]) for s in retried["sims"]] == [
            ("SM7_QV100", 0),
            ("SM7_QV100", 1),
            ("SM7_TITANV", 0),
        ]
        original = (await http.get(f"/api/runs/{run['id']}")).json()
        assert original["state"] == "partial"  # the old run keeps its record


async def test_rerun_and_retry_follow_create_runs_rules(core):
    async with core.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        await finish(core, run, ["failed"])
        await core.store.traces.put_trace(ready_trace(state="failed", error="gone bad"))
        for action in ("rerun", "retry"):
            resp = await http.post(f"/api/runs/{run['id']}/{action}")
            assert (resp.status_code, resp.json()["detail"]) == (
                409,
                "trace tinyformer-step-sm70 is failed, not ready",
            )


async def test_delete_trace_only_when_no_active_run_uses_it(core):
    settings = core.settings
    mirror = settings.traces_dir / "tinyformer-step-sm70" / "traces"
    mirror.mkdir(parents=True)
    (mirror / "kernelslist.g").write_text("kernel-1.traceg\n")
    async with core.client() as http:
        run = await create_run(http)
        resp = await http.delete("/api/traces/tinyformer-step-sm70")
        assert resp.status_code == 409
        assert resp.json()["detail"] == (
            f"trace tinyformer-step-sm70 is used by active run {run['id']}: "
            "cancel it or wait until it finishes"
        )
        assert mirror.is_dir()
        assert (await http.post(f"/api/runs/{run['id']}/cancel")).status_code == 200
        resp = await http.delete("/api/traces/tinyformer-step-sm70")
        assert (resp.status_code, resp.content) == (204, b"")
        assert (await http.get("/api/traces/tinyformer-step-sm70")).status_code == 404
        assert not (settings.traces_dir / "tinyformer-step-sm70").exists()
        # Its finished run stays readable and says what happened to its trace.
        kept = (await http.get(f"/api/runs/{run['id']}")).json()
        assert kept["trace"]["state"] == "failed"
        assert kept["trace"]["error"].startswith("trace tinyformer-step-sm70 was deleted at ")
        # and nothing can start on it any more
        resp = await http.post(f"/api/runs/{run['id']}/rerun")
        assert (resp.status_code, resp.json()["detail"]) == (404, "trace tinyformer-step-sm70 not found")


@pytest.mark.parametrize("state", ["uploading", "processing"])
async def test_a_trace_in_flight_cannot_be_deleted(core, state):
    await core.store.traces.put_trace(ready_trace("busy", state=state))
    async with core.client() as http:
        resp = await http.delete("/api/traces/busy")
    assert resp.status_code == 409
    assert resp.json()["detail"].startswith(f"trace busy is {state}: delete it once it is ready or failed")


async def test_deleted_trace_leaves_the_bucket_so_its_id_can_be_uploaded_again(
    make_server, rclone_s3, monkeypatch
):
    s3 = make_client(S3Info(rclone_s3.endpoint, "cascade", rclone_s3.access_key, rclone_s3.secret_key))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", rclone_s3.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", rclone_s3.secret_key)
    server = await make_server(s3_endpoint=rclone_s3.endpoint, s3_bucket="cascade", scan_interval_s=0.05)
    scanner = server.app[TRACE_SCANNER_KEY]
    prefix = "accelsim-traces/doomed/"
    s3.put_object(Bucket="cascade", Key=prefix + "traces/kernel-1.trace", Body=b"x")
    s3.put_object(Bucket="cascade", Key=prefix + "metadata.json", Body=b'{"status": "failed"}')
    async with server.client() as http:

        async def state() -> str | None:
            resp = await http.get("/api/traces/doomed")
            return resp.json()["state"] if resp.status_code == 200 else None

        while await state() != "failed":
            await scanner.wait_for_scan()
        assert (server.settings.traces_dir / "doomed" / "metadata.json").is_file()
        resp = await http.delete("/api/traces/doomed")
        assert resp.status_code == 204, resp.text
        assert s3.list_objects_v2(Bucket="cascade", Prefix=prefix).get("Contents", []) == []
        assert not (server.settings.traces_dir / "doomed").exists()
        assert not (server.settings.trace_books_dir / "doomed.json").exists()
        await scanner.wait_for_scan()
        await scanner.wait_for_scan()
        assert await state() is None  # no scan brings it back

        # The same id uploaded again is a new trace, fetched afresh.
        s3.put_object(Bucket="cascade", Key=prefix + "traces/kernel-1.trace", Body=b"xy")
        while await state() is None:
            await scanner.wait_for_scan()
        fresh = (await http.get("/api/traces/doomed")).json()
        assert (fresh["state"], fresh["bytes"], fresh["error"]) == ("uploading", 2, None)
        assert (server.settings.traces_dir / "doomed" / "traces" / "kernel-1.trace").read_bytes() == b"xy"


async def test_deleting_a_trace_when_the_bucket_is_down_changes_nothing(make_server, rclone_s3, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", rclone_s3.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "a-wrong-secret")
    server = await make_server(s3_endpoint=rclone_s3.endpoint, s3_bucket="cascade", scan_interval_s=60)
    await server.store.traces.put_trace(ready_trace("kept"))
    server.app[TRACE_SCANNER_KEY].traces["kept"] = await server.store.traces.get_trace("kept")
    async with server.client() as http:
        resp = await http.delete("/api/traces/kept")
        # Health already knows the endpoint refuses (the first scan failed): 503 without trying.
        assert resp.status_code == 503
        assert resp.json()["detail"].startswith("the S3 endpoint is failing (ClientError: ")
        assert (await http.get("/api/traces/kept")).status_code == 200
    assert not server.store.traces.trace_being_deleted("kept")  # runs may start on it again


async def test_lists_take_limit_and_state(core):
    await core.store.traces.put_trace(ready_trace("broken", state="failed", error="bad"))
    async with core.client() as http:
        runs = [await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}]) for _ in range(3)]
        await finish(core, runs[0], ["failed"])
        await finish(core, runs[1], ["succeeded"])
        newest_first = [r["id"] for r in reversed(runs)]

        async def ids(path: str, **params) -> list[str]:
            resp = await http.get(path, params=params)
            assert resp.status_code == 200, resp.text
            return [item["id"] for item in resp.json()]

        assert await ids("/api/runs") == newest_first
        assert await ids("/api/runs", limit=2) == newest_first[:2]
        whole = {r["id"]: r for r in (await http.get("/api/runs")).json()}
        limited = (await http.get("/api/runs", params={"limit": 2})).json()
        assert limited == [whole[run_id] for run_id in newest_first[:2]]  # the same summaries, counts too
        assert await ids("/api/runs", state="failed") == [runs[0]["id"]]
        assert await ids("/api/runs", state="failed,succeeded") == [runs[1]["id"], runs[0]["id"]]
        assert await ids("/api/runs", state=["active", "failed"], limit=1) == [runs[2]["id"]]
        assert await ids("/api/runs", state="cancelled") == []
        assert await ids("/api/traces", state="failed") == ["broken"]
        assert len(await ids("/api/traces", limit=1)) == 1
        assert len(await ids("/api/runs", limit=2**63 - 1)) == len(
            newest_first
        )  # the largest limit SQLite takes
        assert set(await ids("/api/traces", state="ready")) == {"tinyformer-step-sm70", "turing"}


@pytest.mark.parametrize(
    ("path", "query", "loc", "words"),
    [
        ("/api/runs", "limit=0", ["query", "limit"], "greater than or equal to 1"),
        ("/api/runs", "limit=ten", ["query", "limit"], "valid integer"),
        (
            "/api/runs",
            "limit=9223372036854775808",
            ["query", "limit"],
            "less than or equal to 9223372036854775807",
        ),
        (
            "/api/traces",
            "limit=9223372036854775808",
            ["query", "limit"],
            "less than or equal to 9223372036854775807",
        ),
        (
            "/api/runs",
            "state=done",
            ["query", "state", 0],
            "'active', 'succeeded', 'partial', 'failed' or 'cancelled'",
        ),
        (
            "/api/traces",
            "state=succeeded",
            ["query", "state", 0],
            "'uploading', 'processing', 'ready' or 'failed'",
        ),
    ],
)
async def test_bad_list_parameters_are_a_422_list(core, path, query, loc, words):
    async with core.client() as http:
        resp = await http.get(f"{path}?{query}")
    assert resp.status_code == 422
    [error] = resp.json()["detail"]
    assert error["loc"] == loc and words in error["msg"], error


async def test_a_run_cannot_start_on_a_trace_deleted_meanwhile(core):
    """The store checks the trace under its lock, so a delete racing a create never leaves a run
    of a trace that no longer exists (RunService read the trace before the delete)."""
    trace = await core.store.traces.get_trace("tinyformer-step-sm70")
    await core.store.traces.delete_trace("tinyformer-step-sm70")
    with pytest.raises(NotFound, match="trace tinyformer-step-sm70 not found"):
        await core.store.runs.create_run(
            trace, [RunEntry(gpu_config="SM7_QV100", count=1)], core.app[GPU_CONFIGS_KEY]
        )
    assert await core.store.runs.list_runs() == []


async def _until(condition) -> None:
    """Await a condition the server reaches on its own (a file appearing), yielding meanwhile."""
    while not condition():
        await asyncio.sleep(0.01)


async def test_delete_run_while_a_file_upload_arrives_leaves_nothing(core):
    """A file PUT whose body is still arriving when its run is deleted is a 404, not a 500, and
    neither its row nor its bytes survive the delete."""
    settings = core.settings
    async with core.client() as http:
        run = await create_run(http)
        sim = run["sims"][0]["id"]
        await finish(core, run, ["succeeded", "succeeded"])
        deleted = asyncio.Event()

        async def body():
            yield b"first half "
            await deleted.wait()
            yield b"second half"

        upload = asyncio.create_task(http.put(f"/api/sims/{sim}/files/out.txt", content=body()))
        await _until(lambda: any((settings.files_dir / sim).glob("~out.txt.*.part")))
        resp = await http.delete(f"/api/runs/{run['id']}")
        assert resp.status_code == 204, resp.text
        deleted.set()
        resp = await upload
        assert (resp.status_code, resp.json()) == (404, {"detail": f"sim {sim} not found"})
        assert not (settings.files_dir / sim).exists()
        async with core.store.db.r.execute("SELECT COUNT(*) FROM files WHERE sim_id=?", (sim,)) as cur:
            assert (await cur.fetchone())[0] == 0


async def test_outputs_of_a_deleted_sim_are_refused_by_the_store(core):
    """The store checks the sim in the same write that records its output: a write that lands
    after the run's delete is NotFound, and leaves no orphan row."""
    async with core.client() as http:
        run = await create_run(http)
        sim = run["sims"][0]["id"]
        await finish(core, run, ["succeeded", "succeeded"])
        assert (await http.delete(f"/api/runs/{run['id']}")).status_code == 204
    upload = StepTimelineUpload.model_validate({"simulated": {"steps": [], "summary": {}}, "compare": None})
    with pytest.raises(NotFound):
        await core.store.outputs.put_step_timeline(sim, upload)
    with pytest.raises(NotFound):
        await core.store.outputs.put_file(sim, "out.txt", 4, "text/plain")
    for table in ("files", "step_timelines"):
        async with core.store.db.r.execute(f"SELECT COUNT(*) FROM {table} WHERE sim_id=?", (sim,)) as cur:
            assert (await cur.fetchone())[0] == 0, table


async def test_a_trace_being_deleted_takes_no_new_run(core):
    """DELETE /api/traces checks and reserves the trace under the store's lock before it touches
    the bucket: a run asked for meanwhile is refused, so the delete never meets an active run
    after removing objects (its 409 changes nothing), and a delete that stops frees the trace."""
    trace_id = "tinyformer-step-sm70"
    await core.store.traces.reserve_trace_delete(trace_id)  # what DELETE does first
    async with core.client() as http:
        resp = await http.post(
            "/api/runs", json={"trace_id": trace_id, "entries": [{"gpu_config": "SM7_QV100", "count": 1}]}
        )
        assert (resp.status_code, resp.json()) == (409, {"detail": f"trace {trace_id} is being deleted"})
        resp = await http.delete(f"/api/traces/{trace_id}")
        assert (resp.status_code, resp.json()) == (409, {"detail": f"trace {trace_id} is being deleted"})
        assert (await http.get("/api/runs")).json() == []
        await core.store.traces.release_trace_delete(trace_id)
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        # With an active run the delete is refused before the reservation: nothing changed.
        resp = await http.delete(f"/api/traces/{trace_id}")
        assert resp.status_code == 409 and run["id"] in resp.json()["detail"]
        assert not core.store.traces.trace_being_deleted(trace_id)
        await finish(core, run, ["succeeded"])
        assert (await http.delete(f"/api/traces/{trace_id}")).status_code == 204
        assert not core.store.traces.trace_being_deleted(trace_id)
