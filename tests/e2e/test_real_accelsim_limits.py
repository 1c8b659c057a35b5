"""Issue 32 with the real simulator: the attacker's `-gpgpu_n_clusters 400` (1.44 GB) under a
1,000 MiB memory limit fails at once saying which limit, while the same config within its limit
runs; and the simulator's own option table refuses `{"-visualizer_enabled": "-trace"}`."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import ready_trace
from tests.e2e.test_real_accelsim_variants import SMOKE, real_accelsim
from tests.e2e.test_sim_limits import no_scratch_left
from tests.helpers import finished_run

pytestmark = [pytest.mark.accelsim, pytest.mark.timeout(300)]


@pytest.fixture
async def limited_server(local_server, monkeypatch, tmp_path):
    monkeypatch.setenv("CASCADE_SIM_MEMORY_LIMIT_MB", "1000")
    monkeypatch.setenv("CASCADE_SCRATCH_DIR", str(tmp_path / "scratch"))
    server = await local_server(ready_trace("smoke", kernels=2), local_slots=2, accelsim_dir=real_accelsim())
    shutil.copytree(SMOKE, server.settings.traces_dir / "smoke" / "traces")
    return server


async def test_400_clusters_stop_at_the_memory_limit(limited_server, tmp_path):
    async with limited_server.client() as http:
        entries = [
            {"gpu_config": "SM7_QV100", "count": 1},
            {"gpu_config": "SM7_QV100", "count": 1, "options": {"-gpgpu_n_clusters": "400"}},
        ]
        resp = await http.post("/api/runs", json={"trace_id": "smoke", "entries": entries})
        assert resp.status_code == 201, resp.text
        run = await finished_run(http, resp.json()["id"], timeout=240)
        sims = {s["label"]: s for s in run["sims"]}
        assert sims["SM7_QV100"]["state"] == "succeeded", sims["SM7_QV100"]
        big = sims["SM7_QV100[gpgpu_n_clusters=400]"]
        assert big["state"] == "failed"
        assert big["error"] == (
            "memory limit reached: the simulator may use 1,000 MiB (CASCADE_SIM_MEMORY_LIMIT_MB=1000)"
        )
        assert big["kernels_done"] == 0 and big["exit_code"] == 134  # SIGABRT after std::bad_alloc
        await no_scratch_left(tmp_path / "scratch")

        trick = await http.post(
            "/api/runs",
            json={
                "trace_id": "smoke",
                "entries": [
                    {"gpu_config": "SM7_QV100", "count": 1, "options": {"-visualizer_enabled": "-trace"}}
                ],
            },
        )
        assert trick.status_code == 422 and "option's name" in trick.json()["detail"]
        typed = await http.post(
            "/api/runs",
            json={
                "trace_id": "smoke",
                "entries": [{"gpu_config": "SM7_QV100", "count": 1, "options": {"-gpgpu_n_clusters": "-5"}}],
            },
        )
        assert typed.status_code == 422 and "from 0 to 4294967295" in typed.json()["detail"]
