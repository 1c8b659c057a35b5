"""Issue 23 on the real single-node Slurm: a sharded run's shards are separate jobs, merged into one
result; cancel and `kill -9` of the server behave as for any run. The jobs run the stand-in, which
replays only each shard's blocks of a recorded real log."""

from __future__ import annotations

import asyncio
import signal

import httpx
import pytest

from cascade_server.events import Broker
from cascade_server.storage import Store
from tests.conftest import TOKEN, ready_trace
from tests.e2e.test_local_runs import finished_run, get_run
from tests.helpers import free_port, wait_until
from tests.slurm.cluster import squeue_ids
from tests.slurm.test_slurm_runs import scontrol, slurm_settings, worker_env  # noqa: F401  (a fixture)
from tests.slurm.test_slurm_server_kill import start_serve

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("slurm_cluster")]


async def create_sharded(http: httpx.AsyncClient, shards: int = 3, count: int = 1) -> dict:
    resp = await http.post(
        "/api/runs",
        json={
            "trace_id": "tinyformer-step-sm70",
            "entries": [{"gpu_config": "SM7_QV100", "count": count, "shards": shards}],
        },
    )
    assert resp.status_code == 201, resp.text
    return resp.json()


async def merged_indexes(http: httpx.AsyncClient, run_id: str) -> list[int]:
    return [k["kernel_index"] for k in (await http.get(f"/api/runs/{run_id}/kernels")).json()]


async def test_shards_are_separate_jobs_and_merge(make_server, worker_env, tmp_path):  # noqa: F811
    server = await make_server(**slurm_settings(tmp_path))
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_sharded(http, shards=3, count=2)
        final = await finished_run(http, run["id"], timeout=180)
        assert final["state"] == "succeeded" and final["replay"] is True, final
        jobs = {sim["launcher_ref"].split("_")[0] for sim in final["sims"]}
        assert len(jobs) == 3  # one job array per shard, a task per replica
        for sim in final["sims"]:
            shown = scontrol("show", "job", "-o", sim["launcher_ref"])
            assert f"JobName=cascade.{run['id']}.SM7_QV100.shard{sim['shard']['index']}" in shown
            assert sim["kernels_done"] == sim["kernels_total"]
        assert await merged_indexes(http, run["id"]) == [*range(15), *range(15)]


async def test_cancel_stops_every_shards_job(make_server, worker_env, tmp_path):  # noqa: F811
    server = await make_server(**slurm_settings(tmp_path, replay_speed=0.5))
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_sharded(http, shards=3)

        async def running():
            sims = (await get_run(http, run["id"]))["sims"]
            return sims if all(s["state"] == "running" for s in sims) else None

        sims = await wait_until(running, 60)
        refs = {s["launcher_ref"] for s in sims}
        assert len({ref.split("_")[0] for ref in refs}) == 3 and refs <= squeue_ids()
        assert (await http.post(f"/api/runs/{run['id']}/cancel")).status_code == 200
        await wait_until(lambda: not (refs & squeue_ids()), 30)
        final = await get_run(http, run["id"])
        assert final["state"] == "cancelled" and {s["state"] for s in final["sims"]} == {"cancelled"}


async def test_kill_9_the_server_mid_run_and_a_new_one_finishes_the_shards(tmp_path):
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
            run = await create_sharded(http, shards=3)

            async def midway():
                sims = (await get_run(http, run["id"]))["sims"]
                return sims if all(s["state"] == "running" and s["launcher_ref"] for s in sims) else None

            sims = await wait_until(midway, 90)
        server.send_signal(signal.SIGKILL)
        server.wait()
        refs = {s["id"]: s["launcher_ref"] for s in sims}
        assert set(refs.values()) <= squeue_ids()  # the shards' jobs go on without a server
        await asyncio.sleep(2)
        server = await start_serve(data_dir, port, log_path, s3_port)
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=30
        ) as http:
            final = await finished_run(http, run["id"], timeout=180)
            assert final["state"] == "succeeded", final
            assert {s["id"]: s["launcher_ref"] for s in final["sims"]} == refs  # the same jobs
            assert await merged_indexes(http, run["id"]) == list(range(15))
        assert log_path.read_text().count("Slurm job array") == 3  # one sbatch per shard, before the kill
    finally:
        server.terminate()
        server.wait(timeout=30)
