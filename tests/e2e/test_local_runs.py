"""Runs on the local launcher, end to end: the real server on a real port, real `cascade worker`
subprocesses driving the stand-in replay (or a fake `accel-sim.out` for failure endings)."""

from __future__ import annotations

import asyncio
import gzip
import os
import signal

import pytest

from cascade_server.launchers.local import is_worker_of
from tests.conftest import ready_trace
from tests.helpers import (
    create_run,
    finished_run,
    get_run,
    recording,
    running_midway,
    sim_states,
    sims_when,
    wait_until,
)
from tests.worker.fakes import install_fake_accelsim

SM70_CONFIGS = ["SM7_GV100", "SM7_QV100", "SM7_TITANV"]

pytestmark = pytest.mark.timeout(240)


def first_running(sims: list[dict]) -> bool:
    return sims[0]["state"] == "running"


async def test_three_configs_two_replicas_replay_to_success(local_server):
    server = await local_server(local_slots=6, replay_speed=25.0)
    async with server.client() as http:
        run = await create_run(http, [(c, 2) for c in SM70_CONFIGS])
        assert {s["state"] for s in run["sims"]} <= {"pending", "launching"}
        async with sim_states(http, run["id"]) as states:
            final = await finished_run(http, run["id"])
            await wait_until(
                lambda: all(s and s[-1] == "succeeded" for s in states.values()) and len(states) == 6, 10
            )
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


async def test_cancel_mid_run_stops_the_worker(local_server):
    server = await local_server(local_slots=2, replay_speed=1.0)
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 1)])
        sim_id = run["sims"][0]["id"]
        [sim] = await sims_when(http, run["id"], lambda sims: first_running(sims) and sims[0]["log_tail"])
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


async def test_a_sigkilled_worker_fails_with_its_exit_status(local_server):
    server = await local_server(local_slots=2, replay_speed=1.0, heartbeat_timeout_s=1.0)
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 1)])
        async with sim_states(http, run["id"]) as states:
            [sim] = await sims_when(http, run["id"], first_running)
            os.killpg(int(sim["launcher_ref"]), signal.SIGKILL)
            final = await finished_run(http, run["id"], timeout=60)
        sim = final["sims"][0]
        assert sim["state"] == "failed"
        assert sim["error"] == "worker killed by SIGKILL" and sim["exit_code"] == 137
        # The launcher saw the exit (the error says how it ended; without a launcher the sim would
        # go lost, then fail for silence: the next test). No exact sequence: a loaded machine may
        # interleave a late state.
        assert "running" in states[sim["id"]] and states[sim["id"]][-1] == "failed"


async def test_a_silent_worker_goes_lost_then_failed(local_server, monkeypatch):
    """A worker that is alive but silent (stopped, or cut off) is only noticed by the heartbeat
    monitor: the sim goes lost, then failed after 10x the timeout."""
    monkeypatch.setenv("CASCADE_HEARTBEAT_INTERVAL_S", "0.2")
    server = await local_server(local_slots=2, replay_speed=1.0, heartbeat_timeout_s=0.8)
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 1)])
        async with sim_states(http, run["id"]) as states:
            [sim] = await sims_when(http, run["id"], first_running)
            pid = int(sim["launcher_ref"])
            os.kill(pid, signal.SIGSTOP)  # alive but silent: only the heartbeat monitor can tell
            try:
                final = await finished_run(http, run["id"], timeout=60)
            finally:
                os.killpg(pid, signal.SIGKILL)
                os.kill(pid, signal.SIGCONT)
        assert final["sims"][0]["state"] == "failed"
        seen = states[final["sims"][0]["id"]]
        assert "lost" in seen and seen[-1] == "failed" and "no heartbeat" in final["sims"][0]["error"]


async def test_server_restart_mid_run_loses_no_line(local_server):
    server = await local_server(local_slots=2, replay_speed=6.0)
    async with server.client() as http:
        run = await create_run(http, [("SM7_TITANV", 1), ("SM7_QV100", 1)])
        await sims_when(http, run["id"], running_midway)
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


async def test_slot_limit_keeps_the_rest_pending(local_server):
    server = await local_server(local_slots=1, replay_speed=20.0)
    async with server.client() as http:
        run = await create_run(http, [("SM7_TITANV", 3)])
        most_at_once = 0
        async with sim_states(http, run["id"]):

            async def done():
                nonlocal most_at_once
                current = await get_run(http, run["id"])
                started = [s for s in current["sims"] if s["state"] in ("launching", "running")]
                most_at_once = max(most_at_once, len(started))
                return current if current["state"] != "active" else None

            final = await wait_until(done, 120, interval=0.05)
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


async def test_each_failure_reason_with_a_fake_accelsim(local_server, tmp_path):
    fake = install_fake_accelsim(
        tmp_path / "accel-sim",
        {
            "SM7_OK": {"fake_behaviour": "ok", "fake_kernels": "3"},
            **{name: options for name, (options, _) in FAILURES.items()},
        },
    )
    server = await local_server(
        ready_trace("fake-trace", kernels=3), trace_dir=True, local_slots=4, accelsim_dir=fake
    )
    async with server.client() as http:
        run = await create_run(
            http, [("SM7_OK", 1), *[(name, 1) for name in FAILURES]], trace_id="fake-trace"
        )
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


async def test_a_sim_that_cannot_start_fails_with_the_reason(local_server, tmp_path):
    fake = install_fake_accelsim(tmp_path / "accel-sim", {"SM7_OK": {}})
    # The trace's directory was never made.
    server = await local_server(ready_trace("no-kernelslist"), local_slots=1, accelsim_dir=fake)
    async with server.client() as http:
        run = await create_run(http, [("SM7_OK", 1)], trace_id="no-kernelslist")
        final = await finished_run(http, run["id"])
        sim = final["sims"][0]
        assert sim["state"] == "failed"
        assert sim["error"].startswith("trace has no traces/kernelslist.g")


async def test_cancel_while_queued_never_starts_the_worker(local_server):
    server = await local_server(local_slots=1, replay_speed=1.0)
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 2)])
        sims = await sims_when(http, run["id"], lambda sims: any(s["state"] == "running" for s in sims))
        queued = next(s for s in sims if s["state"] == "pending")
        first = next(s for s in sims if s["state"] == "running")
        await http.post(f"/api/runs/{run['id']}/cancel")
        await wait_until(lambda: not is_worker_of(int(first["launcher_ref"]), first["id"]), 30)
        # The one slot is free again and the launcher's queue is first in, first out: a sim
        # submitted now runs only after the queued one, had it wrongly stayed in the queue.
        later = await create_run(http, [("SM7_QV100", 1)])
        await sims_when(http, later["id"], first_running)
        await http.post(f"/api/runs/{later['id']}/cancel")
        final = await get_run(http, run["id"])
        left = next(s for s in final["sims"] if s["id"] == queued["id"])
        assert (left["state"], left["launcher_ref"]) == ("cancelled", None)
        # Every worker the launcher starts logs to workers/<sim id>.log from its first moment.
        workers = server.settings.data_dir / "workers"
        assert (workers / f"{first['id']}.log").exists()
        assert not (workers / f"{queued['id']}.log").exists()


async def test_a_worker_that_died_while_the_server_was_down_fails_the_sim(local_server):
    server = await local_server(local_slots=1, replay_speed=1.0)
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 1)])
        [sim] = await sims_when(http, run["id"], first_running)
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
