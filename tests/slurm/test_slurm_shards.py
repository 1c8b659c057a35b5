"""Issue 23 on the real single-node Slurm: a sharded run's shards are separate jobs, merged into one
result; cancel and `kill -9` of the server behave as for any run. The jobs run the stand-in, which
replays only each shard's blocks of a recorded real log."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.helpers import all_running, create_run, finished_run, get_run, sims_when, wait_until
from tests.slurm.cluster import SLURM_LAUNCHER, scontrol, squeue_ids

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("slurm_cluster")]


async def create_sharded(http: httpx.AsyncClient, shards: int = 3, count: int = 1) -> dict:
    return await create_run(http, [{"gpu_config": "SM7_QV100", "count": count, "shards": shards}])


async def merged_indexes(http: httpx.AsyncClient, run_id: str) -> list[int]:
    return [k["kernel_index"] for k in (await http.get(f"/api/runs/{run_id}/kernels")).json()]


async def test_shards_are_separate_jobs_and_merge(slurm_server):
    server = await slurm_server()
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


async def test_cancel_stops_every_shards_job(slurm_server):
    server = await slurm_server(replay_speed=0.5)
    async with server.client() as http:
        run = await create_sharded(http, shards=3)
        sims = await sims_when(http, run["id"], all_running)
        refs = {s["launcher_ref"] for s in sims}
        assert len({ref.split("_")[0] for ref in refs}) == 3 and refs <= squeue_ids()
        assert (await http.post(f"/api/runs/{run['id']}/cancel")).status_code == 200
        await wait_until(lambda: not (refs & squeue_ids()), 30)
        final = await get_run(http, run["id"])
        assert final["state"] == "cancelled" and {s["state"] for s in final["sims"]} == {"cancelled"}


async def test_kill_9_the_server_mid_run_and_a_new_one_finishes_the_shards(seeded_data_dir, start_serve):
    server = await start_serve(seeded_data_dir, **SLURM_LAUNCHER)
    async with server.client() as http:
        run = await create_sharded(http, shards=3)
        sims = await sims_when(
            http, run["id"], lambda sims: all(s["state"] == "running" and s["launcher_ref"] for s in sims), 90
        )
    await server.kill()
    refs = {s["id"]: s["launcher_ref"] for s in sims}
    assert set(refs.values()) <= squeue_ids()  # the shards' jobs go on without a server
    await asyncio.sleep(2)
    await server.start()
    async with server.client() as http:
        final = await finished_run(http, run["id"], timeout=180)
        assert final["state"] == "succeeded", final
        assert {s["id"]: s["launcher_ref"] for s in final["sims"]} == refs  # the same jobs
        assert await merged_indexes(http, run["id"]) == list(range(15))
    assert server.log.read_text().count("Slurm job array") == 3  # one sbatch per shard, before the kill
