"""`cascade serve` on the slurm launcher killed with SIGKILL mid-run and started again: the jobs
are untouched, the new server finds them by job id, and the run finishes with no line lost."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from cascade_server.events import Broker
from cascade_server.storage import Store
from tests.conftest import TOKEN, ready_trace
from tests.e2e.test_local_runs import create_run, finished_run, get_run, recording
from tests.e2e.test_local_server_kill import start_serve as start_local_serve
from tests.helpers import free_port, wait_until
from tests.slurm.cluster import squeue_ids

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("slurm_cluster")]


async def start_serve(data_dir: Path, port: int, log_path: Path, s3_port: int) -> subprocess.Popen:
    return await start_local_serve(
        data_dir,
        port,
        log_path,
        s3_port,
        CASCADE_LAUNCHER="slurm",
        CASCADE_SLURM_LOCAL="1",
        CASCADE_SLURM_POLL_S="1",
    )


async def test_kill_9_the_server_mid_run_and_a_new_one_finishes_it(tmp_path):
    data_dir, port, s3_port = tmp_path / "data", free_port(), free_port()
    data_dir.mkdir()
    store = await Store(data_dir / "cascade.db", Broker()).open()
    await store.traces.put_trace(ready_trace())
    await store.close()
    log_path = tmp_path / "serve.log"
    server = await start_serve(data_dir, port, log_path, s3_port)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    try:
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=30
        ) as http:
            run = await create_run(http, [("SM7_TITANV", 1), ("SM7_QV100", 2)])

            async def midway():
                sims = (await get_run(http, run["id"]))["sims"]
                return (
                    sims
                    if all(s["state"] == "running" and 0 < s["kernels_done"] < 15 for s in sims)
                    else None
                )

            sims = await wait_until(midway, 90)
        server.send_signal(signal.SIGKILL)
        server.wait()
        refs = {s["id"]: s["launcher_ref"] for s in sims}
        assert set(refs.values()) <= squeue_ids()  # the jobs go on without a server
        await asyncio.sleep(2)  # the outage: workers spool their output meanwhile
        server = await start_serve(data_dir, port, log_path, s3_port)
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=30
        ) as http:
            final = await finished_run(http, run["id"], timeout=180)
            assert final["state"] == "succeeded", final
            for sim in final["sims"]:
                assert sim["launcher_ref"] == refs[sim["id"]]  # the same jobs, not new ones
                assert sim["kernels_done"] == 15
                assert (await http.get(f"/api/sims/{sim['id']}/log")).content == recording(sim["gpu_config"])
        assert (
            log_path.read_text().count("Slurm job array") == 2
        )  # sbatch ran once per entry, before the kill
    finally:
        server.terminate()
        server.wait(timeout=30)


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
    settings = make_settings(
        launcher="slurm",
        slurm_local=True,
        slurm_poll_s=1.0,
        replay_speed=25.0,
        slurm_output_dir=tmp_path / "slurm-out",
    )
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
