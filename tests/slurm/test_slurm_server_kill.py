"""`cascade serve` on the slurm launcher killed with SIGKILL mid-run and started again: the jobs
are untouched, the new server finds them by job id, and the run finishes with no line lost."""

from __future__ import annotations

import asyncio
import os
import subprocess

import pytest

from tests.conftest import ready_trace
from tests.helpers import create_run, finished_run, recording, running_midway, sims_when
from tests.slurm.cluster import SLURM_LAUNCHER, slurm_settings, squeue_ids

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("slurm_cluster")]


async def test_kill_9_the_server_mid_run_and_a_new_one_finishes_it(seeded_data_dir, start_serve):
    server = await start_serve(seeded_data_dir, **SLURM_LAUNCHER)
    async with server.client() as http:
        run = await create_run(http, [("SM7_TITANV", 1), ("SM7_QV100", 2)])
        sims = await sims_when(http, run["id"], running_midway, 90)
    await server.kill()
    refs = {s["id"]: s["launcher_ref"] for s in sims}
    assert set(refs.values()) <= squeue_ids()  # the jobs go on without a server
    await asyncio.sleep(2)  # the outage: workers spool their output meanwhile
    await server.start()
    async with server.client() as http:
        final = await finished_run(http, run["id"], timeout=180)
        assert final["state"] == "succeeded", final
        for sim in final["sims"]:
            assert sim["launcher_ref"] == refs[sim["id"]]  # the same jobs, not new ones
            assert sim["kernels_done"] == 15
            assert (await http.get(f"/api/sims/{sim['id']}/log")).content == recording(sim["gpu_config"])
    # sbatch ran once per entry, before the kill
    assert server.log.read_text().count("Slurm job array") == 2


async def test_jobs_submitted_just_before_a_crash_are_found_not_submitted_again(
    make_settings, tmp_path, monkeypatch
):
    """The server died between `sbatch` and recording the job ids: the sims are `pending` with no
    `launcher_ref`, yet their jobs exist. The next server finds them by name and replica."""
    from cascade_core.models import RunEntry
    from cascade_server.appkeys import GPU_CONFIGS_KEY
    from cascade_server.launchers.manual import ManualLauncher
    from cascade_server.launchers.slurm_jobs import ArrayJob, batch_script, parse_sbatch_output, sbatch_argv
    from cascade_server.services.run_service import RunService, StoreLauncherEvents
    from tests.conftest import LiveServer

    monkeypatch.setenv("CASCADE_HEARTBEAT_INTERVAL_S", "0.5")
    settings = make_settings(**slurm_settings(tmp_path))
    first = await LiveServer(settings.model_copy(update={"launcher": "manual"})).start()
    trace = ready_trace()
    await first.store.traces.put_trace(trace)
    run = await first.store.runs.create_run(
        trace, [RunEntry(gpu_config="SM7_QV100", count=2)], first.app[GPU_CONFIGS_KEY], replay=True
    )
    runs = RunService(
        first.store, settings, first.app[GPU_CONFIGS_KEY], ManualLauncher(StoreLauncherEvents(first.store))
    )
    specs = [runs.sim_spec(s, trace.id) for s in run.sims]
    await first.stop()
    # What the dead server's launcher did: one sbatch for the entry, never recorded.
    job = ArrayJob(run.id, "SM7_QV100", tuple(s.sim_id for s in specs), tuple(s.replica for s in specs))
    env = {k: v for k, v in specs[0].env.items() if k != "CASCADE_SIM_ID"}
    (tmp_path / "slurm-out").mkdir()
    done = subprocess.run(
        sbatch_argv(job, sorted(env), tmp_path / "slurm-out"),
        input=batch_script(job, settings.worker_argv(), tmp_path / "slurm-out"),
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    job_id = parse_sbatch_output(done.stdout)
    server = await LiveServer(settings).start()
    try:
        async with server.client() as http:
            final = await finished_run(http, run.id, timeout=120)
            assert final["state"] == "succeeded", final
            assert sorted(s["launcher_ref"] for s in final["sims"]) == [f"{job_id}_0", f"{job_id}_1"]
    finally:
        await server.stop()
