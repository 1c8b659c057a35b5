"""The server picks the simulator at each use: the stand-in, then a build `cascade simulator
install` made while it runs (its configs too), with CASCADE_ACCELSIM_DIR always first; and the
slurm launcher's rule for a simulator the compute nodes may not see."""

from __future__ import annotations

from pathlib import Path

from cascade_core import simulator_layout as layout
from cascade_core.models import SimSummary
from cascade_server.appkeys import RUNS_KEY
from cascade_server.settings import Settings
from cascade_server.simulator_watch import SimulatorWatch
from tests.conftest import ready_trace
from tests.worker.fakes import build_manifest, install_fake_accelsim, make_trace_dir


def installed_build(prefix: Path, data: Path, configs: tuple[str, ...] = ("SM7_FAKE",)) -> Path:
    """What `cascade simulator install` leaves: a build with its manifest, `current` pointing at it."""
    build = prefix / "builds" / "73f9fac6-667834cf-000000000000"
    install_fake_accelsim(layout.accelsim_dir(build), {name: {} for name in configs})
    manifest = build_manifest(build.name, build_seconds=150.0, smoke_detail="2 kernels on SM7_QV100")
    (build / layout.MANIFEST).write_text(manifest.to_json())
    layout.point_current(data, build)
    return build


async def test_an_install_while_the_server_runs_is_used_from_the_next_run(make_server, tmp_path):
    server = await make_server(launcher="manual")
    trace = ready_trace("t70", kernels=1)
    await server.store.traces.put_trace(trace)
    make_trace_dir(server.settings.traces_dir / trace.id)
    async with server.client() as http:
        launcher = (await http.get("/api/launcher")).json()
        assert {k: launcher[k] for k in ("name", "running", "queued")} == {
            "name": "manual",
            "running": 0,
            "queued": 0,
        }
        assert launcher["simulator"]["kind"] == "stand-in"
        assert "cascade simulator install" in launcher["simulator"]["hint"]
        assert "SM7_QV100" in {c["name"] for c in (await http.get("/api/gpu-configs")).json()}

        build = installed_build(tmp_path / "prefix", server.settings.data_dir)
        simulator = (await http.get("/api/launcher")).json()["simulator"]
        assert simulator == {
            "kind": "installed",
            "path": str(layout.accelsim_dir(build.resolve())),
            "framework_commit": "73f9",
            "gpgpu_sim_commit": "6678",
            "built_at": "2026-11-30T19:48:46+00:00",
            "configs": 1,
            "archs": None,  # the fake has no opcode headers: nothing is claimed about what it runs
            "smoke_passed": True,
            "smoke_detail": "2 kernels on SM7_QV100",
            "problem": None,
            "hint": None,
        }
        assert [c["name"] for c in (await http.get("/api/gpu-configs")).json()] == ["SM7_FAKE"]
        resp = await http.post(
            "/api/runs", json={"trace_id": trace.id, "entries": [{"gpu_config": "SM7_FAKE", "count": 1}]}
        )
        assert resp.status_code == 201, resp.text
        assert resp.json()["replay"] is False
    # The worker is told where the build is.
    runs = server.app[RUNS_KEY]
    spec = runs.sim_spec(SimSummary.model_validate(resp.json()["sims"][0]), trace.id)
    assert spec.env["CASCADE_ACCELSIM_DIR"] == str(layout.accelsim_dir(build.resolve()))


async def test_cascade_accelsim_dir_wins_over_an_installed_build(make_server, tmp_path):
    checkout = install_fake_accelsim(tmp_path / "checkout", {"SM7_MINE": {}})
    server = await make_server(launcher="manual", accelsim_dir=checkout)
    installed_build(tmp_path / "prefix", server.settings.data_dir)
    async with server.client() as http:
        simulator = (await http.get("/api/launcher")).json()["simulator"]
        assert (simulator["kind"], simulator["path"], simulator["smoke_passed"]) == (
            "accelsim-dir",
            str(checkout),
            None,
        )
        assert [c["name"] for c in (await http.get("/api/gpu-configs")).json()] == ["SM7_MINE"]


def slurm_settings(tmp_path: Path, **values) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        launcher="slurm",
        public_url="http://10.0.0.5:8000",
        samples=False,
        **values,
    )


def test_slurm_runs_a_real_simulator_only_from_shared_storage(tmp_path: Path) -> None:
    settings = slurm_settings(tmp_path)
    build = installed_build(tmp_path / "data" / "simulator", settings.data_dir)
    problem = SimulatorWatch(settings, {}).slurm_problem()
    assert problem is not None and problem.startswith(
        f"the slurm launcher will not run the simulator at {layout.accelsim_dir(build.resolve())}: "
        "compute nodes may not see it (CASCADE_SLURM_SHARED_ROOTS does not list a folder the nodes share)"
    )
    assert "cascade simulator install --prefix" in problem
    assert "not under CASCADE_SLURM_SHARED_ROOTS (/shared)" in (
        SimulatorWatch(slurm_settings(tmp_path, slurm_shared_roots="/shared"), {}).slurm_problem() or ""
    )
    # Under a shared root, on a cluster that is this host, or a checkout the operator named: fine.
    assert (
        SimulatorWatch(slurm_settings(tmp_path, slurm_shared_roots=f"/x:{tmp_path}"), {}).slurm_problem()
        is None
    )
    assert SimulatorWatch(slurm_settings(tmp_path, slurm_local=True), {}).slurm_problem() is None
    named = slurm_settings(tmp_path, accelsim_dir=layout.accelsim_dir(build))
    assert SimulatorWatch(named, {}).slurm_problem() is None
    # The stand-in runs anywhere.
    assert SimulatorWatch(slurm_settings(tmp_path / "empty"), {}).slurm_problem() is None
    # The API reports it.
    info = SimulatorWatch(settings, {}).info()
    assert info.kind == "installed" and info.problem == problem
