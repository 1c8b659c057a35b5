"""Issue 22 with the real simulator: a variant's options reach accel-sim.out (its per-kernel cycles
equal a direct run with the same option and differ from the unmodified config), the server reads
the options from the simulator's own list, and a sweep over 3 values makes 3 variants, each with
its own label wherever results group by config. The smoke trace (2 small kernels, ~1.5 s a sim)
keeps it short; -gpgpu_n_clusters changes its cycles below a few clusters."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cascade_core import simulator_layout as layout
from cascade_core.models import RunDetail
from cascade_tui.views.result_views import total_records
from cascade_worker.simulator import smoke
from tests.accelsim_build import finished_prefix
from tests.conftest import ready_trace
from tests.helpers import finished_run

pytestmark = [pytest.mark.accelsim, pytest.mark.timeout(300)]

SMOKE = smoke.TRACE  # the smoke run's trace: 2 small kernels
_CYCLES = re.compile(r"^gpu_sim_cycle = (\d+)\s*$", re.MULTILINE)


def real_accelsim() -> Path:
    build = next(b for b in (finished_prefix() / "builds").iterdir() if layout.is_complete(b))
    return layout.accelsim_dir(build)


def direct_cycles(accelsim: Path, config: str, work: Path, *option: str) -> list[int]:
    """accel-sim.out run by hand, as its README says, with `option` after the configs."""
    work.mkdir(parents=True)
    cfg = accelsim / "gpu-simulator/gpgpu-sim/configs/tested-cfgs" / config
    for path in cfg.iterdir():
        shutil.copy(path, work)
    shutil.copy(accelsim / "gpu-simulator/configs/tested-cfgs" / config / "trace.config", work)
    env = {**os.environ, "LD_LIBRARY_PATH": str(layout.lib_dir_of(accelsim))}
    done = subprocess.run(
        [
            str(accelsim / "gpu-simulator/bin/release/accel-sim.out"),
            "-trace",
            str(SMOKE / "kernelslist.g"),
            "-config",
            "./gpgpusim.config",
            "-config",
            "./trace.config",
            *option,
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "exit detected" in done.stdout, done.stdout[-2000:]
    return [int(c) for c in _CYCLES.findall(done.stdout)]


@pytest.fixture
async def real_server(local_server):
    server = await local_server(ready_trace("smoke", kernels=2), local_slots=2, accelsim_dir=real_accelsim())
    shutil.copytree(SMOKE, server.settings.traces_dir / "smoke" / "traces")
    return server


async def test_a_variant_runs_with_its_option_and_matches_a_direct_run(real_server, tmp_path):
    accelsim = real_accelsim()
    expected = await asyncio.to_thread(
        direct_cycles, accelsim, "SM7_QV100", tmp_path / "one", "-gpgpu_n_clusters", "1"
    )
    plain = await asyncio.to_thread(direct_cycles, accelsim, "SM7_QV100", tmp_path / "plain")
    assert expected != plain
    async with real_server.client() as http:
        # the simulator's own option list: an option no config file sets is known too
        options = {o["name"]: o for o in (await http.get("/api/gpu-configs/SM7_QV100/options")).json()}
        assert options["-gpgpu_n_clusters"]["value"] == "80" and options["-gpgpu_n_clusters"]["in_config"]
        assert "processing clusters" in options["-gpgpu_n_clusters"]["description"]
        unknown = await http.post(
            "/api/runs",
            json={
                "trace_id": "smoke",
                "entries": [{"gpu_config": "SM7_QV100", "count": 1, "options": {"-gpgpu_no_such": "1"}}],
            },
        )
        assert unknown.status_code == 422 and "-gpgpu_no_such" in unknown.json()["detail"]
        resp = await http.post(
            "/api/runs",
            json={
                "trace_id": "smoke",
                "entries": [
                    {"gpu_config": "SM7_QV100", "count": 1},
                    {"gpu_config": "SM7_QV100", "count": 1, "options": {"-gpgpu_n_clusters": "1"}},
                ],
            },
        )
        assert resp.status_code == 201, resp.text
        run = await finished_run(http, resp.json()["id"])
        assert run["state"] == "succeeded" and run["replay"] is False, run
        kernels = (await http.get(f"/api/runs/{run['id']}/kernels")).json()
        label_of = {s["id"]: s["label"] for s in run["sims"]}
        by_label: dict[str, list[int]] = {}
        for k in kernels:
            by_label.setdefault(label_of[k["sim_id"]], []).append(k["gpu_sim_cycle"])
        assert by_label == {"SM7_QV100": plain, "SM7_QV100[gpgpu_n_clusters=1]": expected}
        variant = next(s for s in run["sims"] if s["options"])
        log = (await http.get(f"/api/sims/{variant['id']}/log")).text
        assert re.search(r"^-gpgpu_n_clusters\s+1 # number of processing clusters", log, re.MULTILINE)


async def test_a_sweep_over_three_values_makes_three_labelled_variants(real_server):
    async with real_server.client() as http:
        entries = [
            {"gpu_config": "SM7_QV100", "count": 1, "options": {"-gpgpu_n_clusters": v}}
            for v in ("1", "2", "80")
        ]
        resp = await http.post("/api/runs", json={"trace_id": "smoke", "entries": entries})
        assert resp.status_code == 201, resp.text
        run = await finished_run(http, resp.json()["id"])
        assert run["state"] == "succeeded", run
        labels = [f"SM7_QV100[gpgpu_n_clusters={v}]" for v in ("1", "2", "80")]
        assert sorted(s["label"] for s in run["sims"]) == sorted(labels)
        comparison = (await http.get(f"/api/runs/{run['id']}/comparison")).json()
        assert comparison["configs"] == labels
        assert all(row["sim_ns"][label] is not None for row in comparison["rows"] for label in labels)
        perfetto = (await http.get(f"/api/runs/{run['id']}/perfetto")).json()["traceEvents"]
        assert [e["args"]["name"] for e in perfetto if e.get("name") == "process_name"] == labels
        files = (await http.get(f"/api/runs/{run['id']}/files")).json()
        assert {f["label"] for f in files} == set(labels)
        kernels = (await http.get(f"/api/runs/{run['id']}/kernels")).json()
        from cascade_core.models import KernelStat

        totals = total_records(RunDetail.model_validate(run), [KernelStat.model_validate(k) for k in kernels])
        assert [t["config"] for t in totals] == labels
        times = [t["total_ns"] for t in totals]
        assert times[0] > times[1] > times[2]  # fewer clusters, slower
