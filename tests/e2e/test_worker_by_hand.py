"""`cascade worker` started by hand for a sim of a manual-launcher server (bring your own host)."""

from __future__ import annotations

import os

import pytest

from tests.conftest import ready_trace
from tests.helpers import create_run, exit_status, finished_run, free_port, get_run, recording, sims_when

pytestmark = pytest.mark.timeout(120)


async def test_a_worker_by_hand_runs_a_sim_to_success(server, start_worker):
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [("SM7_TITANV", 1)])
        sim = run["sims"][0]
        worker = start_worker(server, sim_id=sim["id"], gpu_config="SM7_TITANV", speed="50")
        assert await exit_status(worker) == 0, worker.stdout.read().decode()
        final = await finished_run(http, run["id"])
        assert final["sims"][0]["state"] == "succeeded"
        assert (await http.get(f"/api/sims/{sim['id']}/log")).content == recording("SM7_TITANV")


async def test_cancel_reaches_a_worker_through_its_heartbeat(server, start_worker):
    """No launcher process to signal: the worker stops on `cancel: true`, and takes its
    simulator with it."""
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 1)])
        sim_id = run["sims"][0]["id"]
        worker = start_worker(server, sim_id=sim_id, speed="1")
        await sims_when(http, run["id"], lambda sims: sims[0]["state"] == "running", 30)
        await http.post(f"/api/runs/{run['id']}/cancel")
        assert await exit_status(worker, 30) == 0
        output = worker.stdout.read().decode()
        assert "stopping the simulator: cancelled" in output
        with pytest.raises(ProcessLookupError):
            os.killpg(worker.pid, 0)  # the replay process is gone too
        assert (await get_run(http, run["id"]))["sims"][0]["state"] == "cancelled"


async def test_a_wrong_token_stops_the_worker_with_a_clear_message(server, start_worker):
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 1)])
    worker = start_worker(url=server.url, token="wrong", sim_id=run["sims"][0]["id"])
    assert await exit_status(worker, 30) == 3
    output = worker.stdout.read().decode()
    assert "401" in output and "wrong" not in output.replace("--token", "")
    assert "Traceback" not in output


async def test_an_unreachable_server_is_given_up_after_the_limit(start_worker):
    worker = start_worker(
        url=f"http://127.0.0.1:{free_port()}",
        sim_id="sim-000000000000",
        speed="1000",
        env={"CASCADE_GIVE_UP_S": "1"},
    )
    assert await exit_status(worker, 60) == 3
    output = worker.stdout.read().decode()
    assert "gave up after 1 s" in output and "Traceback" not in output


async def test_a_step_timeline_that_cannot_be_built_never_fails_the_sim(server, start_worker, tmp_path):
    """The trace has step-timeline files, but one is broken: the sim still succeeds, and the
    reason is one of its files."""
    await server.store.traces.put_trace(ready_trace())
    trace_dir = tmp_path / "trace"
    trace_dir.mkdir()
    (trace_dir / "corrected_timeline.json").write_text('{"steps": "not a list"}')
    (trace_dir / "kernel_mapping.json").write_text('{"trace_kernels": 0, "steps": []}')
    async with server.client() as http:
        run = await create_run(http, [("SM7_TITANV", 1)])
        sim = run["sims"][0]
        worker = start_worker(
            server,
            sim_id=sim["id"],
            gpu_config="SM7_TITANV",
            speed="50",
            trace_dir=str(trace_dir),
        )
        assert await exit_status(worker) == 0
        output = worker.stdout.read().decode()
        assert "step timeline not sent: " in output and "corrected_timeline.json: steps" in output
        final = await finished_run(http, run["id"])
        assert final["sims"][0]["state"] == "succeeded"
        files = {f["name"] for f in (await http.get(f"/api/sims/{sim['id']}/files")).json()}
        assert "step-timeline-error.txt" in files
        reason = (await http.get(f"/api/sims/{sim['id']}/files/step-timeline-error.txt")).text
        assert reason.startswith("step timeline not sent: ") and "corrected_timeline.json" in reason
        assert (await http.get(f"/api/runs/{run['id']}/step-timelines")).json() == []
