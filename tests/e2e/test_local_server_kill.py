"""`cascade serve` killed with SIGKILL mid-run and started again: the local workers outlive it,
spool their output while it is gone, and finish the run with every line delivered."""

from __future__ import annotations

import asyncio

import pytest

from cascade_server.launchers.local import is_worker_of
from tests.e2e.conftest import LOCAL_LAUNCHER
from tests.helpers import create_run, finished_run, recording, running_midway, sims_when

pytestmark = pytest.mark.timeout(240)


async def test_kill_9_the_server_mid_run(seeded_data_dir, start_serve):
    server = await start_serve(seeded_data_dir, **LOCAL_LAUNCHER)
    async with server.client() as http:
        run = await create_run(http, [("SM7_TITANV", 1), ("SM7_QV100", 1)])
        sims = await sims_when(http, run["id"], running_midway)
    await server.kill()
    await asyncio.sleep(2)  # the outage
    for sim in sims:
        assert is_worker_of(int(sim["launcher_ref"]), sim["id"])
    await server.start()
    async with server.client() as http:
        final = await finished_run(http, run["id"])
        assert final["state"] == "succeeded", final
        for sim in final["sims"]:
            assert sim["kernels_done"] == 15
            assert (await http.get(f"/api/sims/{sim['id']}/log")).content == recording(sim["gpu_config"])
