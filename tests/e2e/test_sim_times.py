"""A sim's started_at/finished_at are the sim's own times, as its worker stamped them
(`Heartbeat.at`), not when the server heard of them: minutes the server was down are no part of
the sim's elapsed time nor of the run's duration. The server bounds what it is told."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from cascade_core.models import utcnow
from tests.conftest import ready_trace
from tests.helpers import create_run, exit_status, finished_run, get_run, sims_when, wait_until

pytestmark = pytest.mark.timeout(180)


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


async def _launched(http, run_id: str) -> None:
    """The manual launcher has the sims `launching`: waiting for a worker's heartbeat."""
    await sims_when(http, run_id, lambda sims: all(s["state"] == "launching" for s in sims), 30)


async def test_a_server_outage_is_not_the_sims_time(server, start_worker, tmp_path):
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [("SM7_TITANV", 1)])
        await _launched(http, run["id"])
    sim_id = run["sims"][0]["id"]
    await server.stop()  # down before the worker starts, until after its simulator has exited
    output = tmp_path / "worker.out"
    with open(output, "wb") as out:
        worker = start_worker(server, sim_id=sim_id, gpu_config="SM7_TITANV", speed="50", stdout=out)

    async def simulator_exited() -> bool:
        return "simulator exited" in output.read_text()

    await wait_until(simulator_exited, 60)
    back_at = utcnow()
    await server.start()
    assert await exit_status(worker, 120) == 0, output.read_text()
    async with server.client() as http:
        final = await finished_run(http, run["id"])
        sim = final["sims"][0]
    assert sim["state"] == "succeeded"
    started, finished = _time(sim["started_at"]), _time(sim["finished_at"])
    # The server heard of both only once it was back; the sim did both before.
    assert _time(sim["created_at"]) <= started <= finished < back_at, (sim, back_at)
    assert _time(sim["last_heartbeat_at"]) >= back_at
    assert _time(final["finished_at"]) == finished  # the run's duration ends with its sim


async def test_a_reported_time_is_bounded_by_now_and_the_sims_creation(server):
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [("SM7_TITANV", 1), ("SM7_QV100", 1)])
        await _launched(http, run["id"])
        early, late = (s["id"] for s in run["sims"])
        created = _time(run["created_at"])
        future = (utcnow() + timedelta(days=1)).isoformat()
        past = (created - timedelta(days=1)).isoformat()
        # A clock a day ahead: never in the future.
        assert (
            await http.post(f"/api/sims/{late}/heartbeat", json={"state": "running", "at": future})
        ).status_code == 200
        before_final = utcnow()
        assert (
            await http.post(
                f"/api/sims/{late}/heartbeat", json={"state": "failed", "error": "x", "at": future}
            )
        ).status_code == 200
        # A clock a day behind: never before the sim existed (nor finished before it started).
        assert (
            await http.post(f"/api/sims/{early}/heartbeat", json={"state": "running", "at": past})
        ).status_code == 200
        assert (
            await http.post(f"/api/sims/{early}/heartbeat", json={"state": "succeeded", "at": past})
        ).status_code == 200
        # A spec client sends no `at`: the time the server heard it, as before.
        sims = {s["id"]: s for s in (await get_run(http, run["id"]))["sims"]}
        bad = await http.post(f"/api/sims/{early}/heartbeat", json={"state": "running", "at": "yesterday"})
        assert bad.status_code == 422
    after = utcnow()
    assert before_final <= _time(sims[late]["finished_at"]) <= after
    assert _time(sims[late]["started_at"]) <= _time(sims[late]["finished_at"])
    assert _time(sims[early]["started_at"]) == created == _time(sims[early]["finished_at"])
