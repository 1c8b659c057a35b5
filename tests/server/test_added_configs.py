"""Issue 31: GPU configs of your own (`POST/DELETE /api/gpu-configs`), checked by the installed
simulator (here the fake `accel-sim.out`, which refuses an option it does not register in the real
one's words), kept in the data directory across restarts, refused for removal while a pending
run uses them; and the straight answer for a trace whose arch the simulator has no opcodes for."""

from __future__ import annotations

import pytest

from cascade_core.models import SimSummary
from cascade_server.appkeys import RUNS_KEY
from tests.conftest import ready_trace
from tests.helpers import create_run, finished_run
from tests.worker.fakes import install_fake_accelsim, make_trace_dir, write_opcode_headers

A100 = (
    "# the A100, halved\n-gpgpu_compute_capability_major 8\n-gpgpu_compute_capability_minor 0\n"
    "-gpgpu_clock_domains 1410:1410:1512:6048\n-gpgpu_n_clusters 54\n"
)
TRACE_CONFIG = "-trace_opcode_latency_initiation_int 4,2\n"
# An AccelWattch file keeps its CRLF line ends, byte for byte.
XML = '<?xml version="1.0"?>\r\n<component id="root"/>\r\n'


@pytest.fixture
def fake_simulator(tmp_path):
    """A fake Accel-Sim whose sources know Volta, Turing and Ampere traces (as the pinned one)."""
    root = install_fake_accelsim(tmp_path / "accelsim", {"SM7_QV100": {}})
    return write_opcode_headers(root, {"volta": 70, "turing": 75, "ampere": 80})


@pytest.fixture
async def configs_server(make_server, fake_simulator):
    server = await make_server(accelsim_dir=fake_simulator)
    await server.store.traces.put_trace(ready_trace("a100-trace", arch="sm_80", kernels=1))
    make_trace_dir(server.settings.traces_dir / "a100-trace")
    return server


def body(name: str = "LAB_A100", arch: str | None = None, **files: str) -> dict:
    given = files or {"gpgpusim.config": A100, "trace.config": TRACE_CONFIG, "accelwattch_sass_sim.xml": XML}
    if "gpgpusim__config" in given and "trace__config" not in given:  # a config needs both
        given = {**given, "trace__config": TRACE_CONFIG}
    return {"name": name, "arch": arch, "files": {k.replace("__", "."): v for k, v in given.items()}}


async def test_an_added_config_is_listed_at_once_and_survives_a_restart(configs_server):
    server = configs_server
    async with server.client() as http:
        resp = await http.post("/api/gpu-configs", json=body())
        assert resp.status_code == 201, resp.text
        assert resp.json() == {
            "name": "LAB_A100",
            "arch": "sm_80",
            "core_clock_mhz": 1410.0,
            "added": True,
            "power_model": True,  # its files hold an AccelWattch model
        }
        listed = {c["name"]: c for c in (await http.get("/api/gpu-configs")).json()}
        assert listed["LAB_A100"]["added"] is True and listed["SM7_QV100"]["added"] is False
        # the simulator's option echo on the config's own values
        options = {o["name"]: o for o in (await http.get("/api/gpu-configs/LAB_A100/options")).json()}
        assert options["-gpgpu_n_clusters"]["value"] == "54" and options["-gpgpu_n_clusters"]["in_config"]
        files = (await http.get("/api/gpu-configs/LAB_A100/files")).json()
        assert files == {"name": "LAB_A100", "files": body()["files"]}
    folder = server.settings.data_dir / "gpu-configs" / "LAB_A100"
    assert (folder / "accelwattch_sass_sim.xml").read_bytes() == XML.encode()
    await server.restart()
    async with server.client() as http:
        listed = {c["name"]: c for c in (await http.get("/api/gpu-configs")).json()}
        assert listed["LAB_A100"] == {
            "name": "LAB_A100",
            "arch": "sm_80",
            "core_clock_mhz": 1410.0,
            "added": True,
            "power_model": True,
        }
        run = await create_run(http, [("LAB_A100", 1)], trace_id="a100-trace")
    # the worker is told where its files are
    spec = server.app[RUNS_KEY].sim_spec(SimSummary.model_validate(run["sims"][0]), "a100-trace")
    assert spec.env["CASCADE_GPU_CONFIG_DIR"] == str(folder)
    assert (
        "CASCADE_GPU_CONFIG_DIR"
        not in server.app[RUNS_KEY]
        .sim_spec(SimSummary.model_validate({**run["sims"][0], "gpu_config": "SM7_QV100"}), "a100-trace")
        .env
    )


async def test_a_config_the_simulator_refuses_is_a_422_in_its_words_and_nothing_is_kept(configs_server):
    async with configs_server.client() as http:
        resp = await http.post(
            "/api/gpu-configs", json=body("BAD", **{"gpgpusim__config": A100 + "-unknown_option 1\n"})
        )
        assert resp.status_code == 422, resp.text
        assert resp.json()["detail"] == (
            "config BAD: the installed simulator refuses it: "
            "GPGPU-Sim ** ERROR: Unknown Option: '-unknown_option' (exit status 1)"
        )
        assert "BAD" not in {c["name"] for c in (await http.get("/api/gpu-configs")).json()}
    assert list((configs_server.settings.data_dir / "gpu-configs").iterdir()) == []


@pytest.mark.parametrize(
    ("sent", "said"),
    [
        (body(trace__config=TRACE_CONFIG), "a config needs a gpgpusim.config"),
        (body("../up"), "config name '../up' must be 1 to 64 letters"),
        (body("x" * 65), "must be 1 to 64 letters"),
        (body(gpgpusim__config=A100, **{"notes__txt": "x"}), "file 'notes.txt' is not a config file"),
        ({"name": "X1", "files": {"gpgpusim.config": A100, "sub/x.icnt": ""}}, "file 'sub/x.icnt'"),
        (body(gpgpusim__config=A100 + "-ptx_line_stats_filename /tmp/x\n"), "has value '/tmp/x'"),
        (body(gpgpusim__config=A100.replace("-gpgpu_clock", "#")), "sets no core clock"),
        (body(gpgpusim__config=A100 + "-network_mode 1\n-inter_config_file x.icnt\n"), "names 'x.icnt'"),
        (body("MYGPU", gpgpusim__config="-gpgpu_clock_domains 1000:1:1:1\n"), "give the arch"),
        (body(arch="sm80"), "arch 'sm80' must be written like sm_80"),
        (body(gpgpusim__config="x" * (4 << 20) + "\n"), "a config file may have at most"),
    ],
)
async def test_a_config_that_breaks_a_rule_is_a_422_saying_which(configs_server, sent, said):
    async with configs_server.client() as http:
        resp = await http.post("/api/gpu-configs", json=sent)
        assert resp.status_code == 422, resp.text
        assert said in resp.json()["detail"]
        assert not any(c["added"] for c in (await http.get("/api/gpu-configs")).json())


async def test_a_body_that_is_no_config_is_a_422_list(configs_server):
    async with configs_server.client() as http:
        for sent in (
            {"name": "X"},
            {**body(), "dry_run": True},
            {"name": "X", "files": {"gpgpusim.config": 1}},
        ):
            resp = await http.post("/api/gpu-configs", json=sent)
            assert resp.status_code == 422 and isinstance(resp.json()["detail"], list), resp.text


@pytest.mark.parametrize(
    ("name", "arch", "config", "expected"),
    [
        ("MYGPU", "sm_75", "-gpgpu_clock_domains 1000:1:1:1\n", "sm_75"),  # only the arch given says
        ("SM75_MINE", None, "-gpgpu_clock_domains 1000:1:1:1\n", "sm_75"),  # the name's prefix
        ("SM75_MINE", "sm_86", "-gpgpu_clock_domains 1000:1:1:1\n", "sm_86"),  # the arch over the name
        ("MYGPU", "sm_75", A100, "sm_80"),  # the compute capability wins
    ],
)
async def test_the_arch_is_the_compute_capability_then_the_arch_given_then_the_name(
    configs_server, name, arch, config, expected
):
    async with configs_server.client() as http:
        resp = await http.post("/api/gpu-configs", json=body(name, arch, gpgpusim__config=config))
        assert resp.status_code == 201, resp.text
        assert resp.json()["arch"] == expected


async def test_a_name_that_exists_is_a_409(configs_server):
    async with configs_server.client() as http:
        resp = await http.post("/api/gpu-configs", json=body("SM7_QV100"))
        assert resp.status_code == 409 and "one of the simulator's own configs" in resp.json()["detail"]
        assert (await http.post("/api/gpu-configs", json=body())).status_code == 201
        again = await http.post("/api/gpu-configs", json=body())
        assert again.status_code == 409 and "already added" in again.json()["detail"]


async def test_without_a_real_simulator_nothing_can_check_a_config(make_server):
    server = await make_server()  # the stand-in
    async with server.client() as http:
        resp = await http.post("/api/gpu-configs", json=body())
        assert resp.status_code == 409
        assert "cascade simulator install" in resp.json()["detail"]


async def test_a_config_a_pending_run_uses_is_not_removed_until_the_run_ends(configs_server):
    server = configs_server
    async with server.client() as http:
        assert (await http.post("/api/gpu-configs", json=body())).status_code == 201
        run = await create_run(http, [("LAB_A100", 2)], trace_id="a100-trace")  # manual: stays pending
        resp = await http.delete("/api/gpu-configs/LAB_A100")
        assert (resp.status_code, resp.json()) == (
            409,
            {
                "detail": f"config LAB_A100 is in use by unfinished run {run['id']}: cancel it or let it "
                "finish, then remove the config"
            },
        )
        assert "LAB_A100" in {c["name"] for c in (await http.get("/api/gpu-configs")).json()}
        assert (await http.get(f"/api/runs/{run['id']}")).json()["state"] == "active"
        await http.post(f"/api/runs/{run['id']}/cancel")
        assert (await http.delete("/api/gpu-configs/LAB_A100")).status_code == 204
        assert "LAB_A100" not in {c["name"] for c in (await http.get("/api/gpu-configs")).json()}
        assert (await http.get(f"/api/runs/{run['id']}")).json()["state"] == "cancelled"  # the run stays
        refused = await http.post(
            "/api/runs", json={"trace_id": "a100-trace", "entries": [{"gpu_config": "LAB_A100", "count": 1}]}
        )
        assert refused.status_code == 422 and "unknown gpu_config 'LAB_A100'" in refused.json()["detail"]
        simulators = await http.delete("/api/gpu-configs/SM7_QV100")
        assert simulators.status_code == 409 and "only configs added" in simulators.json()["detail"]
        assert (await http.delete("/api/gpu-configs/NOPE")).status_code == 404
    assert not (server.settings.data_dir / "gpu-configs" / "LAB_A100").exists()


async def test_a_trace_of_an_arch_the_simulator_cannot_run_gets_the_straight_answer(configs_server):
    server = configs_server
    await server.store.traces.put_trace(ready_trace("h100-trace", arch="sm_90", kernels=1))
    async with server.client() as http:
        simulator = (await http.get("/api/launcher")).json()["simulator"]
        assert simulator["archs"] == ["sm_70", "sm_75", "sm_80"]
        # a config of the trace's arch does not help: the simulator has no opcodes for it
        hopper = body("SM90_MINE", gpgpusim__config=A100.replace("major 8", "major 9"))
        assert (await http.post("/api/gpu-configs", json=hopper)).json()["arch"] == "sm_90"
        for config in ("SM90_MINE", "SM7_QV100"):
            resp = await http.post(
                "/api/runs", json={"trace_id": "h100-trace", "entries": [{"gpu_config": config, "count": 1}]}
            )
            assert resp.status_code == 422, resp.text
            detail = resp.json()["detail"]
            assert detail.startswith(
                "trace h100-trace is sm_90 (Hopper: H100, H200, GH200), which the installed Accel-Sim "
                "cannot simulate: its trace parser has no opcodes for binary version 90"
            )
            assert (
                "it knows sm_70, sm_75, sm_80" in detail and "cascade simulator install --framework" in detail
            )
        assert (await http.get("/api/runs")).json() == []


async def test_a_local_worker_runs_an_added_config_from_the_data_directory(make_server, fake_simulator):
    server = await make_server(launcher="local", local_slots=2, accelsim_dir=fake_simulator)
    await server.store.traces.put_trace(ready_trace("a100-trace", arch="sm_80", kernels=1))
    make_trace_dir(server.settings.traces_dir / "a100-trace")
    async with server.client() as http:
        assert (await http.post("/api/gpu-configs", json=body())).status_code == 201
        run = await finished_run(http, (await create_run(http, [("LAB_A100", 1)], "a100-trace"))["id"])
        sim = run["sims"][0]
        assert (sim["state"], run["replay"]) == ("succeeded", False), sim
        log = (await http.get(f"/api/sims/{sim['id']}/log")).text
    assert "-gpgpu_n_clusters 54" in log  # the simulator read the added config's files
