"""`cascade worker` started by hand for a sim of a manual-launcher server (bring your own host)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import TOKEN, ready_trace
from tests.e2e.test_local_runs import create_run, finished_run, get_run, recording
from tests.helpers import free_port, wait_until

pytestmark = pytest.mark.timeout(120)


def start_worker(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "cascade_worker", *args],
        env={**os.environ, "CASCADE_HEARTBEAT_INTERVAL_S": "0.3", "CASCADE_KILL_GRACE_S": "3", **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


async def wait_exit(proc: subprocess.Popen, timeout: float = 60) -> int:
    async def ended():
        return proc.poll() is not None

    await wait_until(ended, timeout)
    return proc.returncode


async def test_a_worker_by_hand_runs_a_sim_to_success(server):
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [("SM7_TITANV", 1)])
        sim = run["sims"][0]
        worker = start_worker(
            "--url",
            server.url,
            "--token",
            TOKEN,
            "--sim-id",
            sim["id"],
            "--gpu-config",
            "SM7_TITANV",
            "--speed",
            "50",
        )
        assert await wait_exit(worker) == 0, worker.stdout.read().decode()
        final = await finished_run(http, run["id"])
        assert final["sims"][0]["state"] == "succeeded"
        assert (await http.get(f"/api/sims/{sim['id']}/log")).content == recording("SM7_TITANV")


async def test_cancel_reaches_a_worker_through_its_heartbeat(server):
    """No launcher process to signal: the worker stops on `cancel: true`, and takes its
    simulator with it."""
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 1)])
        sim_id = run["sims"][0]["id"]
        worker = start_worker("--url", server.url, "--token", TOKEN, "--sim-id", sim_id, "--speed", "1")

        async def running():
            return (await get_run(http, run["id"]))["sims"][0]["state"] == "running"

        await wait_until(running, 30)
        await http.post(f"/api/runs/{run['id']}/cancel")
        assert await wait_exit(worker, 30) == 0
        output = worker.stdout.read().decode()
        assert "stopping the simulator: cancelled" in output
        with pytest.raises(ProcessLookupError):
            os.killpg(worker.pid, 0)  # the replay process is gone too
        assert (await get_run(http, run["id"]))["sims"][0]["state"] == "cancelled"


async def test_a_wrong_token_stops_the_worker_with_a_clear_message(server):
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 1)])
    worker = start_worker("--url", server.url, "--token", "wrong", "--sim-id", run["sims"][0]["id"])
    assert await wait_exit(worker, 30) == 3
    output = worker.stdout.read().decode()
    assert "401" in output and "wrong" not in output.replace("--token", "")
    assert "Traceback" not in output


async def test_an_unreachable_server_is_given_up_after_the_limit():
    worker = start_worker(
        "--url",
        f"http://127.0.0.1:{free_port()}",
        "--sim-id",
        "sim-000000000000",
        "--speed",
        "1000",
        env={"CASCADE_GIVE_UP_S": "1"},
    )
    assert await wait_exit(worker, 60) == 3
    output = worker.stdout.read().decode()
    assert "gave up after 1 s" in output and "Traceback" not in output


async def test_a_step_timeline_that_cannot_be_built_never_fails_the_sim(server, tmp_path):
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
            "--url",
            server.url,
            "--token",
            TOKEN,
            "--sim-id",
            sim["id"],
            "--gpu-config",
            "SM7_TITANV",
            "--speed",
            "50",
            "--trace-dir",
            str(trace_dir),
        )
        assert await wait_exit(worker) == 0
        output = worker.stdout.read().decode()
        assert "step timeline not sent: " in output and "corrected_timeline.json: steps" in output
        final = await finished_run(http, run["id"])
        assert final["sims"][0]["state"] == "succeeded"
        files = {f["name"] for f in (await http.get(f"/api/sims/{sim['id']}/files")).json()}
        assert "step-timeline-error.txt" in files
        reason = (await http.get(f"/api/sims/{sim['id']}/files/step-timeline-error.txt")).text
        assert reason.startswith("step timeline not sent: ") and "corrected_timeline.json" in reason
        assert (await http.get(f"/api/runs/{run['id']}/step-timelines")).json() == []
