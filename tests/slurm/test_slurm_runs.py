"""Runs on the slurm launcher against a real single-node Slurm: the real server on a real port,
`sbatch`/`squeue`/`scancel`/`scontrol` for real, `cascade worker` in the jobs driving the
stand-in replay."""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import TOKEN
from tests.e2e.test_local_runs import SM70_CONFIGS
from tests.helpers import (
    all_running,
    create_run,
    finished_run,
    get_run,
    recording,
    sim_states,
    sims_when,
    wait_until,
)
from tests.slurm.cluster import scontrol, squeue_ids

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("slurm_cluster")]


async def test_three_configs_two_replicas_succeed_through_slurm(slurm_server, tmp_path):
    server = await slurm_server()
    async with server.client() as http:
        run = await create_run(http, [(c, 2) for c in SM70_CONFIGS])
        async with sim_states(http, run["id"]) as states:
            final = await finished_run(http, run["id"], timeout=180)
            await wait_until(
                lambda: len(states) == 6 and all(s[-1] == "succeeded" for s in states.values()), 10
            )
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


def split(sims: list[dict]) -> bool:
    """2 sims queued by Slurm for want of CPUs (`pending`, with a job id), 8 running."""
    queued = [s for s in sims if s["state"] == "pending" and s["launcher_state"] == "PENDING (Resources)"]
    running = [s for s in sims if s["state"] == "running" and s["launcher_state"] == "RUNNING"]
    return len(queued) == 2 and len(running) == 8


async def test_queued_sims_show_slurm_reason_and_cancel_empties_the_queue(slurm_server):
    # 10 sims on a node of 8 CPUs: 2 wait PENDING (Resources) and stay `pending`, with a job id.
    server = await slurm_server(replay_speed=0.5)
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 10)])
        sims = await sims_when(http, run["id"], split)
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


async def test_job_killed_from_outside_fails_with_slurm_reason(slurm_server):
    server = await slurm_server(replay_speed=0.5)
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 2)])
        victim, survivor = await sims_when(http, run["id"], all_running)
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


async def test_sbatch_refusing_fails_the_sims_with_slurms_message(slurm_server):
    server = await slurm_server(slurm_partition="no-such-partition")
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


async def test_the_token_never_reaches_slurm_or_a_log(slurm_server, tmp_path):
    server = await slurm_server(replay_speed=2.0)
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 1)])
        [sim] = await sims_when(http, run["id"], all_running)
        ref = sim["launcher_ref"]
        shown = scontrol("show", "job", "-dd", ref)
        script = scontrol("write", "batch_script", ref, "-")
        assert "JobId=" in shown and "#!/bin/bash" in script and sim["id"] in script
        assert TOKEN not in shown and TOKEN not in script
        final = await finished_run(http, run["id"], timeout=120)
        assert final["state"] == "succeeded"  # the worker had the token: it came in the environment
    for path in (tmp_path / "slurm-out").iterdir():
        assert TOKEN not in path.read_text(errors="replace"), path


async def _error_has(http, run_id: str, sim_id: str, text: str) -> bool:
    sims = (await get_run(http, run_id))["sims"]
    return any(s["id"] == sim_id and text in (s["error"] or "") for s in sims)


async def _sim_state(http, run_id: str, sim_id: str, state: str) -> bool:
    sims = (await get_run(http, run_id))["sims"]
    return any(s["id"] == sim_id and s["state"] == state for s in sims)
