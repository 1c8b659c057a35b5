"""`cascade tui` on a run whose sims Slurm still queues: the sims table shows each one's job id
and Slurm's state and reason (a real single-node Slurm, a real server, the real UI)."""

from __future__ import annotations

import pytest

from tests.conftest import ready_trace
from tests.helpers import get_run, wait_until
from tests.slurm.cluster import slurm_settings, squeue_ids

from .conftest import create_run, make_app, open_run_screen, serve, table_rows
from .helpers import wait_for_text

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("slurm_cluster")]


async def test_the_sims_table_shows_queued_sims_job_and_slurm_reason(make_server, tmp_path, monkeypatch):
    monkeypatch.setenv("CASCADE_HEARTBEAT_INTERVAL_S", "0.5")
    server = await serve(make_server, [ready_trace()], **slurm_settings(tmp_path, replay_speed=0.5))
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 9)])  # a node of 8 CPUs: one waits

        async def one_queued():
            sims = (await get_run(http, run["id"]))["sims"]
            queued = [s for s in sims if s["launcher_state"] == "PENDING (Resources)"]
            return queued[0] if len(queued) == 1 and sum(s["state"] == "running" for s in sims) == 8 else None

        queued = await wait_until(one_queued, 60)
        app = make_app(server, tmp_path)
        try:
            async with app.run_test(size=(120, 30)) as pilot:
                await open_run_screen(pilot, run["id"])
                await wait_for_text(pilot, f"job {queued['launcher_ref']} PENDING (Resources)")
                rows = table_rows(app, "PENDING (Resources)")
                assert len(rows) == 1 and "pending" in rows[0]
        finally:
            await http.post(f"/api/runs/{run['id']}/cancel")
            refs = {s["launcher_ref"] for s in (await get_run(http, run["id"]))["sims"]}
            await wait_until(lambda: not (refs & squeue_ids()), 30)
