"""Issue 13, "Time": runs show their duration (`started_at` and `finished_at` on every RunSummary:
the lists, one run, its event snapshot, derived from the sims' own times), and `GET
/api/launcher` says where a new run's sims go; on a real server."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime

from tests.conftest import ready_trace
from tests.helpers import create_run


def when(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


async def beat(http, sim_id: str, state: str) -> dict:
    body = (
        {"state": state}
        if state == "running"
        else {"state": state, "exit_code": 0 if state == "succeeded" else 1}
    )
    resp = await http.post(f"/api/sims/{sim_id}/heartbeat", json=body)
    assert resp.status_code == 200, resp.text
    return (await http.get(f"/api/sims/{sim_id}/results")).json()["sim"]


async def listed(http, run_id: str, query: str = "") -> dict:
    runs = {r["id"]: r for r in (await http.get(f"/api/runs{query}")).json()}
    return runs[run_id]


async def test_a_run_starts_with_its_first_sim_and_ends_with_its_last(core):
    async with core.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 2}])
        first, second = (s["id"] for s in run["sims"])
        assert (run["started_at"], run["finished_at"]) == (None, None)
        assert (await listed(http, run["id"]))["started_at"] is None

        started = await beat(http, first, "running")
        await beat(http, second, "running")
        ended_first = await beat(http, first, "succeeded")
        for query in ("", "?limit=5", "?state=active"):
            summary = await listed(http, run["id"], query)
            assert summary["started_at"] == started["started_at"], query  # the first sim's start
            assert summary["finished_at"] is None, query  # a sim is still running
        ended_last = await beat(http, second, "failed")

        detail = (await http.get(f"/api/runs/{run['id']}")).json()
        assert detail["state"] == "partial"
        assert detail["started_at"] == started["started_at"]
        assert detail["finished_at"] == ended_last["finished_at"]  # the last sim's end
        assert when(ended_first["finished_at"]) <= when(detail["finished_at"])
        for query in ("", "?limit=1", "?state=partial"):
            summary = await listed(http, run["id"], query)
            assert (summary["started_at"], summary["finished_at"]) == (
                detail["started_at"],
                detail["finished_at"],
            ), query
        assert when(detail["created_at"]) <= when(detail["started_at"]) <= when(detail["finished_at"])


async def test_a_run_cancelled_before_any_sim_ran_has_an_end_but_no_start(core):
    async with core.client() as http:
        run = await create_run(http)
        cancelled = (await http.post(f"/api/runs/{run['id']}/cancel")).json()
        assert cancelled["state"] == "cancelled"
        summary = await listed(http, run["id"])
        assert summary["started_at"] is None
        ends = [when(s["finished_at"]) for s in (await http.get(f"/api/runs/{run['id']}")).json()["sims"]]
        assert when(summary["finished_at"]) == max(ends)


async def test_the_event_snapshot_carries_the_run_times(core):
    async with core.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        sim = await beat(http, run["sims"][0]["id"], "running")
        sim = await beat(http, sim["id"], "succeeded")
        async with http.stream("GET", f"/api/runs/{run['id']}/events") as stream:
            async for line in stream.aiter_lines():
                if line.startswith("data:"):
                    snapshot = json.loads(line[5:])
                    break
        assert snapshot["type"] == "snapshot"
        assert snapshot["run"]["started_at"] == sim["started_at"]
        assert snapshot["run"]["finished_at"] == sim["finished_at"]


# --- GET /api/launcher: where a new run's sims go ------------------------------------------------


async def test_the_launcher_route_needs_the_token(server):
    async with server.client(token=None) as http:
        resp = await http.get("/api/launcher")
    assert resp.status_code == 401 and resp.headers["WWW-Authenticate"] == "Bearer"


async def test_the_manual_launcher_has_no_slots(server):
    async with server.client() as http:
        resp = await http.get("/api/launcher")
    assert resp.status_code == 200
    body = resp.json()
    assert body.pop("simulator")["kind"] == "stand-in"  # which simulator runs (issue 18)
    assert body == {"name": "manual", "slots": None, "running": 0, "queued": 0, "partition": None}


async def test_the_local_launcher_counts_its_busy_slots_and_its_queue(make_server, monkeypatch):
    """Real workers on one slot: the first sim runs (a stand-in slowed right down), the others
    wait in the queue; cancelling frees it all again."""
    monkeypatch.setenv("CASCADE_HEARTBEAT_INTERVAL_S", "0.5")
    server = await make_server(launcher="local", local_slots=1, replay_speed=0.01)
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        body = (await http.get("/api/launcher")).json()
        assert body.pop("simulator")["kind"] == "stand-in"
        assert body == {"name": "local", "slots": 1, "running": 0, "queued": 0, "partition": None}
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 3}])
        status = {}

        async def busy() -> bool:
            status.update((await http.get("/api/launcher")).json())
            return status["running"] == 1 and status["queued"] == 2

        await until(busy, lambda: f"one worker and two queued sims, got {status}")
        await http.post(f"/api/runs/{run['id']}/cancel")

        async def idle() -> bool:
            status.update((await http.get("/api/launcher")).json())
            return status["running"] == 0 and status["queued"] == 0

        await until(idle, lambda: f"the worker gone and the queue empty, got {status}")


async def until(condition, what, timeout: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what()}")
        await asyncio.sleep(0.1)
