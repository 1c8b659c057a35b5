"""Runs on the local launcher, end to end: the real server on a real port, real `cascade worker`
subprocesses driving the stand-in replay (or a fake `accel-sim.out` for failure endings)."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import signal
from collections import defaultdict
from pathlib import Path

import httpx
import pytest
from httpx_sse import aconnect_sse

from cascade_server.launchers.local import is_worker_of
from tests.conftest import ready_trace
from tests.helpers import wait_until
from tests.worker.fakes import install_fake_accelsim, make_trace_dir

REPO = Path(__file__).resolve().parents[2]
RECORDINGS = REPO / "samples" / "recordings"
SM70_CONFIGS = ["SM7_GV100", "SM7_QV100", "SM7_TITANV"]

pytestmark = pytest.mark.timeout(240)


def recording(config: str) -> bytes:
    return gzip.decompress((RECORDINGS / f"{config}.log.gz").read_bytes())


async def get_run(http: httpx.AsyncClient, run_id: str) -> dict:
    resp = await http.get(f"/api/runs/{run_id}")
    resp.raise_for_status()
    return resp.json()


async def finished_run(http: httpx.AsyncClient, run_id: str, timeout: float = 120.0) -> dict:
    async def done():
        run = await get_run(http, run_id)
        return run if run["state"] != "active" else None

    return await wait_until(done, timeout)


async def create_run(
    http: httpx.AsyncClient, entries: list[tuple[str, int]], trace_id="tinyformer-step-sm70"
) -> dict:
    resp = await http.post(
        "/api/runs",
        json={
            "trace_id": trace_id,
            "entries": [{"gpu_config": c, "count": n} for c, n in entries],
        },
    )
    assert resp.status_code == 201, resp.text
    return resp.json()


async def record_sim_states(http: httpx.AsyncClient, run_id: str, states: dict[str, list[str]]) -> None:
    """Every state each sim shows on the run's event stream, snapshot first."""
    async with aconnect_sse(http, "GET", f"/api/runs/{run_id}/events", timeout=None) as source:
        async for event in source.aiter_sse():
            data = json.loads(event.data)
            sims = (
                data["run"]["sims"]
                if data["type"] == "snapshot"
                else [data["sim"]]
                if data["type"] == "sim"
                else []
            )
            for sim in sims:
                if not states[sim["id"]] or states[sim["id"]][-1] != sim["state"]:
                    states[sim["id"]].append(sim["state"])


@pytest.fixture
def worker_env(monkeypatch):
    """Workers inherit the server's environment: quick heartbeats and a short kill grace."""
    monkeypatch.setenv("CASCADE_HEARTBEAT_INTERVAL_S", "0.5")
    monkeypatch.setenv("CASCADE_KILL_GRACE_S", "3")


async def test_three_configs_two_replicas_replay_to_success(make_server, worker_env):
    server = await make_server(launcher="local", local_slots=6, replay_speed=25.0)
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [(c, 2) for c in SM70_CONFIGS])
        assert {s["state"] for s in run["sims"]} <= {"pending", "launching"}
        states: dict[str, list[str]] = defaultdict(list)
        watcher = asyncio.create_task(record_sim_states(http, run["id"], states))
        try:
            final = await finished_run(http, run["id"])
            await wait_until(
                lambda: all(s and s[-1] == "succeeded" for s in states.values()) and len(states) == 6, 10
            )
        finally:
            watcher.cancel()
        assert final["state"] == "succeeded"
        assert final["replay"] is True and final["sample"] is False  # no Accel-Sim here: the stand-in
        assert len(final["sims"]) == 6
        for sim in final["sims"]:
            seen = states[sim["id"]]
            assert seen[-2:] == ["running", "succeeded"], seen
            assert set(seen[:-2]) <= {"pending", "launching"}
            assert sim["kernels_done"] == 15 and sim["exit_code"] == 0 and sim["error"] is None
            assert sim["launcher_ref"].isdigit()
            files = {f["name"] for f in (await http.get(f"/api/sims/{sim['id']}/files")).json()}
            assert files == {"accelsim.log.gz", "gpgpu_inst_stats.txt"}
            log = await http.get(f"/api/sims/{sim['id']}/log")
            assert log.content == recording(sim["gpu_config"]), sim["gpu_config"]
            uploaded = await http.get(f"/api/sims/{sim['id']}/files/accelsim.log.gz")
            assert gzip.decompress(uploaded.content) == recording(sim["gpu_config"])
        kernels = (await http.get(f"/api/runs/{run['id']}/kernels")).json()
        assert len(kernels) == 6 * 15


async def test_cancel_mid_run_stops_the_worker(make_server, worker_env):
    server = await make_server(launcher="local", local_slots=2, replay_speed=1.0)
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 1)])
        sim_id = run["sims"][0]["id"]

        async def running_with_output():
            sim = (await get_run(http, run["id"]))["sims"][0]
            return sim if sim["state"] == "running" and sim["log_tail"] else None

        sim = await wait_until(running_with_output, 60)
        pid = int(sim["launcher_ref"])
        assert is_worker_of(pid, sim_id)
        resp = await http.post(f"/api/runs/{run['id']}/cancel")
        assert resp.status_code == 200 and resp.json()["sims"][0]["state"] == "cancelled"
        await wait_until(lambda: not is_worker_of(pid, sim_id), 30)
        # The simulator (same process group) goes too: both got the SIGTERM, and the group
        # lasts until the launcher has reaped the worker, so wait for it rather than look once.
        await wait_until(lambda: not _group_alive(pid), 30)
        after = (await get_run(http, run["id"]))["sims"][0]
        assert after["state"] == "cancelled" and after["kernels_done"] < 15
        # A late heartbeat (as from a worker that missed the cancel) changes nothing.
        beat = await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "succeeded", "exit_code": 0})
        assert beat.json() == {"state": "cancelled", "cancel": True}
        assert (await get_run(http, run["id"]))["sims"][0]["state"] == "cancelled"


async def test_a_sigkilled_worker_fails_with_its_exit_status(make_server, worker_env):
    server = await make_server(launcher="local", local_slots=2, replay_speed=1.0, heartbeat_timeout_s=1.0)
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 1)])
        states: dict[str, list[str]] = defaultdict(list)
        watcher = asyncio.create_task(record_sim_states(http, run["id"], states))
        try:

            async def running():
                sim = (await get_run(http, run["id"]))["sims"][0]
                return sim if sim["state"] == "running" else None

            sim = await wait_until(running, 60)
            os.killpg(int(sim["launcher_ref"]), signal.SIGKILL)
            final = await finished_run(http, run["id"], timeout=60)
        finally:
            watcher.cancel()
        sim = final["sims"][0]
        assert sim["state"] == "failed"
        assert sim["error"] == "worker killed by SIGKILL" and sim["exit_code"] == 137
        # The launcher saw the exit (the error says how it ended; without a launcher the sim would
        # go lost, then fail for silence: the next test). No exact sequence: a loaded machine may
        # interleave a late state.
        assert "running" in states[sim["id"]] and states[sim["id"]][-1] == "failed"


async def test_a_silent_worker_goes_lost_then_failed(make_server, worker_env, monkeypatch):
    """A worker that is alive but silent (stopped, or cut off) is only noticed by the heartbeat
    monitor: the sim goes lost, then failed after 10x the timeout."""
    monkeypatch.setenv("CASCADE_HEARTBEAT_INTERVAL_S", "0.2")
    server = await make_server(launcher="local", local_slots=2, replay_speed=1.0, heartbeat_timeout_s=0.8)
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 1)])
        states: dict[str, list[str]] = defaultdict(list)
        watcher = asyncio.create_task(record_sim_states(http, run["id"], states))
        try:

            async def running():
                sim = (await get_run(http, run["id"]))["sims"][0]
                return sim if sim["state"] == "running" else None

            sim = await wait_until(running, 60)
            pid = int(sim["launcher_ref"])
            os.kill(pid, signal.SIGSTOP)  # alive but silent: only the heartbeat monitor can tell
            try:
                final = await finished_run(http, run["id"], timeout=60)
            finally:
                os.killpg(pid, signal.SIGKILL)
                os.kill(pid, signal.SIGCONT)
        finally:
            watcher.cancel()
        assert final["sims"][0]["state"] == "failed"
        seen = states[final["sims"][0]["id"]]
        assert "lost" in seen and seen[-1] == "failed" and "no heartbeat" in final["sims"][0]["error"]


async def test_server_restart_mid_run_loses_no_line(make_server, worker_env):
    server = await make_server(launcher="local", local_slots=2, replay_speed=6.0)
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [("SM7_TITANV", 1), ("SM7_QV100", 1)])

        async def some_kernels_done():
            sims = (await get_run(http, run["id"]))["sims"]
            return all(s["state"] == "running" and 0 < s["kernels_done"] < 15 for s in sims)

        await wait_until(some_kernels_done, 60)
    pids = {s["id"]: int(s["launcher_ref"]) for s in (await _run_via(server, run["id"]))["sims"]}
    await server.stop()
    await asyncio.sleep(2)  # the outage: workers keep simulating and spool their output
    assert all(is_worker_of(pid, sim_id) for sim_id, pid in pids.items())
    await server.start()
    async with server.client() as http:
        final = await finished_run(http, run["id"])
        assert final["state"] == "succeeded"
        for sim in final["sims"]:
            assert sim["kernels_done"] == 15
            log = await http.get(f"/api/sims/{sim['id']}/log")
            assert log.content == recording(sim["gpu_config"])


async def _run_via(server, run_id: str) -> dict:
    async with server.client() as http:
        return await get_run(http, run_id)


async def test_slot_limit_keeps_the_rest_pending(make_server, worker_env):
    server = await make_server(launcher="local", local_slots=1, replay_speed=20.0)
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [("SM7_TITANV", 3)])
        states: dict[str, list[str]] = defaultdict(list)
        watcher = asyncio.create_task(record_sim_states(http, run["id"], states))
        most_at_once = 0
        try:

            async def done():
                nonlocal most_at_once
                current = await get_run(http, run["id"])
                started = [s for s in current["sims"] if s["state"] in ("launching", "running")]
                most_at_once = max(most_at_once, len(started))
                return current if current["state"] != "active" else None

            final = await wait_until(done, 120, interval=0.05)
        finally:
            watcher.cancel()
        assert final["state"] == "succeeded"
        assert most_at_once == 1
        started = [s["started_at"] for s in sorted(final["sims"], key=lambda s: s["started_at"])]
        finished = [s["finished_at"] for s in sorted(final["sims"], key=lambda s: s["started_at"])]
        # One at a time: each sim started after the one before it finished.
        assert all(started[i + 1] >= finished[i] for i in range(2))


FAILURES = {
    "SM7_DEADLOCK": ({"fake_behaviour": "deadlock"}, "deadlock detected"),
    "SM7_ASSERT": ({"fake_behaviour": "assertion"}, "assertion failed: reg_dsts_num <= MAX_DST"),
    "SM7_UNSUPPORTED": ({"fake_behaviour": "unsupported"}, "unsupported binary version 95"),
    "SM7_SEGV": ({"fake_behaviour": "SIGSEGV"}, "killed by SIGSEGV"),
    "SM7_KILL": ({"fake_behaviour": "SIGKILL"}, "killed by SIGKILL"),
    "SM7_NOEXIT": ({"fake_behaviour": "no_exit_line"}, "exited 0 without the exit line"),
    "SM7_STATUS3": ({"fake_behaviour": "exit3"}, "exited with status 3"),
}


async def test_each_failure_reason_with_a_fake_accelsim(make_server, worker_env, tmp_path):
    fake = install_fake_accelsim(
        tmp_path / "accel-sim",
        {
            "SM7_OK": {"fake_behaviour": "ok", "fake_kernels": "3"},
            **{name: options for name, (options, _) in FAILURES.items()},
        },
    )
    server = await make_server(launcher="local", local_slots=4, accelsim_dir=fake)
    trace = ready_trace("fake-trace", kernels=3)
    await server.store.traces.put_trace(trace)
    make_trace_dir(server.settings.traces_dir / trace.id)
    async with server.client() as http:
        run = await create_run(http, [("SM7_OK", 1), *[(name, 1) for name in FAILURES]], trace_id=trace.id)
        final = await finished_run(http, run["id"])
        assert final["state"] == "partial"
        assert final["replay"] is False  # a (fake) accel-sim.out is installed: not the stand-in
        by_config = {s["gpu_config"]: s for s in final["sims"]}
        ok = by_config.pop("SM7_OK")
        assert (ok["state"], ok["kernels_done"], ok["exit_code"]) == ("succeeded", 3, 0)
        files = {f["name"] for f in (await http.get(f"/api/sims/{ok['id']}/files")).json()}
        assert files == {"accelsim.log.gz", "gpgpu_inst_stats.txt"}  # not the copied configs
        for name, sim in by_config.items():
            assert (sim["state"], sim["error"]) == ("failed", FAILURES[name][1]), name
        assert by_config["SM7_UNSUPPORTED"]["exit_code"] == 0
        assert by_config["SM7_SEGV"]["exit_code"] == 128 + signal.SIGSEGV
        assert by_config["SM7_DEADLOCK"]["kernels_done"] == 2  # what ran before it is kept
        deadlock_log = (await http.get(f"/api/sims/{by_config['SM7_DEADLOCK']['id']}/log")).text
        assert "deadlock detected" in deadlock_log


async def test_a_sim_that_cannot_start_fails_with_the_reason(make_server, worker_env, tmp_path):
    fake = install_fake_accelsim(tmp_path / "accel-sim", {"SM7_OK": {}})
    server = await make_server(launcher="local", local_slots=1, accelsim_dir=fake)
    await server.store.traces.put_trace(ready_trace("no-kernelslist"))  # its trace dir was never made
    async with server.client() as http:
        run = await create_run(http, [("SM7_OK", 1)], trace_id="no-kernelslist")
        final = await finished_run(http, run["id"])
        sim = final["sims"][0]
        assert sim["state"] == "failed"
        assert sim["error"].startswith("trace has no traces/kernelslist.g")


async def test_cancel_while_queued_never_starts_the_worker(make_server, worker_env):
    server = await make_server(launcher="local", local_slots=1, replay_speed=1.0)
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 2)])

        async def one_running():
            sims = (await get_run(http, run["id"]))["sims"]
            return sims if any(s["state"] == "running" for s in sims) else None

        sims = await wait_until(one_running, 60)
        queued = next(s for s in sims if s["state"] == "pending")
        first = next(s for s in sims if s["state"] == "running")
        await http.post(f"/api/runs/{run['id']}/cancel")
        await wait_until(lambda: not is_worker_of(int(first["launcher_ref"]), first["id"]), 30)
        # The one slot is free again and the launcher's queue is first in, first out: a sim
        # submitted now runs only after the queued one, had it wrongly stayed in the queue.
        later = await create_run(http, [("SM7_QV100", 1)])

        async def later_running():
            sim = (await get_run(http, later["id"]))["sims"][0]
            return sim["state"] == "running"

        await wait_until(later_running, 60)
        await http.post(f"/api/runs/{later['id']}/cancel")
        final = await get_run(http, run["id"])
        left = next(s for s in final["sims"] if s["id"] == queued["id"])
        assert (left["state"], left["launcher_ref"]) == ("cancelled", None)
        # Every worker the launcher starts logs to workers/<sim id>.log from its first moment.
        workers = server.settings.data_dir / "workers"
        assert (workers / f"{first['id']}.log").exists()
        assert not (workers / f"{queued['id']}.log").exists()


async def test_a_worker_that_died_while_the_server_was_down_fails_the_sim(make_server, worker_env):
    server = await make_server(launcher="local", local_slots=1, replay_speed=1.0)
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 1)])

        async def running():
            sim = (await get_run(http, run["id"]))["sims"][0]
            return sim if sim["state"] == "running" else None

        sim = await wait_until(running, 60)
    await server.stop()
    pid = int(sim["launcher_ref"])
    os.killpg(pid, signal.SIGKILL)
    await wait_until(lambda: not is_worker_of(pid, sim["id"]), 30)
    await server.start()
    async with server.client() as http:
        final = await finished_run(http, run["id"], timeout=30)
        assert final["sims"][0]["state"] == "failed"
        assert final["sims"][0]["error"] == "worker is gone (found after a server restart)"


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
