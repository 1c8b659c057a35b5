"""Runs on the slurm launcher against a real single-node Slurm: the real server on a real port,
`sbatch`/`squeue`/`scancel`/`scontrol` for real, `cascade worker` in the jobs driving the
stand-in replay."""

from __future__ import annotations

import asyncio
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from tests.conftest import TOKEN, ready_trace
from tests.e2e.test_local_runs import (
    SM70_CONFIGS,
    create_run,
    finished_run,
    get_run,
    record_sim_states,
    recording,
)
from tests.helpers import wait_until
from tests.slurm.cluster import squeue_ids

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("slurm_cluster")]


@pytest.fixture
def worker_env(monkeypatch):
    """Passed on to the jobs by the launcher: quick heartbeats and a short kill grace."""
    monkeypatch.setenv("CASCADE_HEARTBEAT_INTERVAL_S", "0.5")
    monkeypatch.setenv("CASCADE_KILL_GRACE_S", "3")


def slurm_settings(tmp_path: Path, **overrides) -> dict:
    values = dict(
        launcher="slurm",
        slurm_local=True,
        slurm_poll_s=1.0,
        replay_speed=25.0,
        slurm_output_dir=tmp_path / "slurm-out",
    )
    values.update(overrides)
    return values


def scontrol(*args: str) -> str:
    done = subprocess.run(["scontrol", *args], capture_output=True, text=True)
    return done.stdout + done.stderr


async def test_three_configs_two_replicas_succeed_through_slurm(make_server, worker_env, tmp_path):
    server = await make_server(**slurm_settings(tmp_path))
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [(c, 2) for c in SM70_CONFIGS])
        states: dict[str, list[str]] = defaultdict(list)
        watcher = asyncio.create_task(record_sim_states(http, run["id"], states))
        try:
            final = await finished_run(http, run["id"], timeout=180)
            await wait_until(
                lambda: len(states) == 6 and all(s[-1] == "succeeded" for s in states.values()), 10
            )
        finally:
            watcher.cancel()
        assert final["state"] == "succeeded", final
        assert final["replay"] is True  # no Accel-Sim: the jobs ran the stand-in
        job_ids = {sim["launcher_ref"].split("_")[0] for sim in final["sims"]}
        assert len(job_ids) == 3  # one sbatch (a job array) per run entry
        for sim in final["sims"]:
            assert states[sim["id"]][-2:] == ["running", "succeeded"], states[sim["id"]]
            assert sim["kernels_done"] == 15 and sim["exit_code"] == 0 and sim["error"] is None
            log = await http.get(f"/api/sims/{sim['id']}/log")
            assert log.content == recording(sim["gpu_config"]), sim["gpu_config"]
            # The job's name says which sim it runs; its output went to the absolute output dir.
            shown = scontrol("show", "job", "-o", sim["launcher_ref"])
            assert f"JobName=cascade.{run['id']}.{sim['gpu_config']}" in shown
            assert f"StdOut={tmp_path / 'slurm-out'}/" in shown
            # The job script records the worker's status once the worker has exited (after its final report).
            exit_file = tmp_path / "slurm-out" / f"{sim['launcher_ref']}.exit"
            await wait_until(lambda f=exit_file: f.exists(), 30)
            assert exit_file.read_text().strip() == "0"


async def test_queued_sims_show_slurm_reason_and_cancel_empties_the_queue(make_server, worker_env, tmp_path):
    # 10 sims on a node of 8 CPUs: 2 wait PENDING (Resources) and stay `pending`, with a job id.
    server = await make_server(**slurm_settings(tmp_path, replay_speed=0.5))
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 10)])

        async def split():
            sims = (await get_run(http, run["id"]))["sims"]
            queued = [
                s for s in sims if s["state"] == "pending" and s["launcher_state"] == "PENDING (Resources)"
            ]
            running = [s for s in sims if s["state"] == "running" and s["launcher_state"] == "RUNNING"]
            return sims if len(queued) == 2 and len(running) == 8 else None

        sims = await wait_until(split, 60)
        # What the New run screen says of the next run: Cascade's jobs, running and queued.
        status = (await http.get("/api/launcher")).json()
        assert status.pop("simulator")["kind"] == "stand-in"
        assert status == {"name": "slurm", "slots": None, "running": 8, "queued": 2, "partition": None}
        refs = {s["launcher_ref"] for s in sims}
        assert all(ref.startswith(sims[0]["launcher_ref"].split("_")[0] + "_") for ref in refs)
        assert refs <= squeue_ids()
        resp = await http.post(f"/api/runs/{run['id']}/cancel")
        assert resp.status_code == 200
        await wait_until(lambda: not (refs & squeue_ids()), 30)
        final = await get_run(http, run["id"])
        assert final["state"] == "cancelled"
        assert {s["state"] for s in final["sims"]} == {"cancelled"}


async def test_job_killed_from_outside_fails_with_slurm_reason(make_server, worker_env, tmp_path):
    server = await make_server(**slurm_settings(tmp_path, replay_speed=0.5))
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 2)])

        async def running():
            sims = (await get_run(http, run["id"]))["sims"]
            return sims if all(s["state"] == "running" for s in sims) else None

        victim, survivor = await wait_until(running, 60)
        subprocess.run(["scancel", "--signal=KILL", victim["launcher_ref"]], check=True)
        await wait_until(lambda: _sim_state(http, run["id"], victim["id"], "failed"), 60)
        sim = next(s for s in (await get_run(http, run["id"]))["sims"] if s["id"] == victim["id"])
        # Slurm turns a KILL from outside into a cancel (TERM, then KILL): the worker reports the
        # signal, and the launcher adds what Slurm says ended the job.
        await wait_until(
            lambda: _error_has(
                http, run["id"], victim["id"], f"Slurm job {victim['launcher_ref']} CANCELLED"
            ),
            30,
        )
        sim = next(s for s in (await get_run(http, run["id"]))["sims"] if s["id"] == victim["id"])
        assert "lost" not in sim["error"]
        other = next(s for s in (await get_run(http, run["id"]))["sims"] if s["id"] == survivor["id"])
        assert other["state"] == "running"
        await http.post(f"/api/runs/{run['id']}/cancel")
        await wait_until(lambda: survivor["launcher_ref"] not in squeue_ids(), 30)


async def test_sbatch_refusing_fails_the_sims_with_slurms_message(make_server, worker_env, tmp_path):
    server = await make_server(**slurm_settings(tmp_path, slurm_partition="no-such-partition"))
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 2), ("SM7_TITANV", 1)])
        final = await finished_run(http, run["id"], timeout=30)
        assert final["state"] == "failed"
        for sim in final["sims"]:
            assert sim["state"] == "failed" and sim["launcher_ref"] is None
            assert sim["error"] == (
                "sbatch refused the job: invalid partition specified: no-such-partition; "
                "Batch job submission failed: Invalid partition name specified"
            )


async def test_the_token_never_reaches_slurm_or_a_log(make_server, worker_env, tmp_path):
    server = await make_server(**slurm_settings(tmp_path, replay_speed=2.0))
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 1)])

        async def running():
            sims = (await get_run(http, run["id"]))["sims"]
            return sims[0] if sims[0]["state"] == "running" else None

        sim = await running_sim(running)
        ref = sim["launcher_ref"]
        shown = scontrol("show", "job", "-dd", ref)
        script = scontrol("write", "batch_script", ref, "-")
        assert "JobId=" in shown and "#!/bin/bash" in script and sim["id"] in script
        assert TOKEN not in shown and TOKEN not in script
        final = await finished_run(http, run["id"], timeout=120)
        assert final["state"] == "succeeded"  # the worker had the token: it came in the environment
    for path in (tmp_path / "slurm-out").iterdir():
        assert TOKEN not in path.read_text(errors="replace"), path


async def running_sim(check):
    return await wait_until(check, 60)


async def _error_has(http, run_id: str, sim_id: str, text: str) -> bool:
    sims = (await get_run(http, run_id))["sims"]
    return any(s["id"] == sim_id and text in (s["error"] or "") for s in sims)


async def _sim_state(http, run_id: str, sim_id: str, state: str) -> bool:
    sims = (await get_run(http, run_id))["sims"]
    return any(s["id"] == sim_id and s["state"] == state for s in sims)
