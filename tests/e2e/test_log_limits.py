"""Issue 32, item 2, end to end: a fake `accel-sim.out` prints what `-gpgpu_runtime_stat 1:15`
makes the real one print (818 MB of scratch and 245 MB on the server in two minutes), through a
real server and real workers: the log stays within its limit at the worker and at the server,
every kernel gets through, the log and the sim's error say what was left out; and a sim leaves
no scratch behind: finished, cancelled (whatever it had not sent), or with only its log when the
server it still owes lines never answered."""

from __future__ import annotations

import gzip
import socket

import pytest

from tests.e2e.test_kernel_failures import fake_server, start
from tests.e2e.test_sim_limits import no_scratch_left
from tests.helpers import exit_status, finished_run, get_run, sims_when
from tests.worker.fakes import install_fake_accelsim, make_trace_dir

pytestmark = pytest.mark.timeout(120)
MIB = 2**20
SPEW = {"fake_kernels": "3", "fake_spew_lines": "40000"}  # ~3.5 MB while each of 3 kernels runs


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    parent = tmp_path / "scratch"
    monkeypatch.setenv("CASCADE_SCRATCH_DIR", str(parent))
    return parent


async def spewing_server(make_server, tmp_path, config: dict[str, str], **settings):
    server, trace_id = await fake_server(make_server, tmp_path, {"SM7_LOUD": config}, kernels=3)
    if settings:  # the same server, with other settings
        await server.stop()
        server.settings = server.settings.model_copy(update=settings)
        await server.start()
    return server, trace_id


async def one_sim(http, trace_id: str) -> dict:
    return await start(http, trace_id, [{"gpu_config": "SM7_LOUD", "count": 1}])


async def test_the_worker_keeps_the_log_within_its_limit_and_every_kernel_gets_through(
    make_server, worker_env, tmp_path, monkeypatch, scratch
):
    monkeypatch.setenv("CASCADE_SIM_LOG_LIMIT_MB", "1")
    server, trace_id = await spewing_server(make_server, tmp_path, SPEW)
    async with server.client() as http:
        run = await one_sim(http, trace_id)
        sim = (await finished_run(http, run["id"]))["sims"][0]
        assert sim["state"] == "succeeded" and sim["kernels_done"] == 3, sim
        assert sim["error"].startswith("log limit reached: ") and sim["error"].endswith(
            "of the simulator's output left out past the log limit of 1 MiB (CASCADE_SIM_LOG_LIMIT_MB=1)"
        )
        log = (await http.get(f"/api/sims/{sim['id']}/log")).text
        assert len(log) < 1.1 * MIB
        lines = log.splitlines()
        assert sum(line.startswith("[cascade] the log passed its limit of 1 MiB") for line in lines) == 1
        assert f"[cascade] {sim['error']}" in lines
        assert [line for line in lines if line.startswith("kernel_name = ")] == [
            f"kernel_name = _Z6kernel{n}v " for n in (1, 2, 3)
        ]
        assert "GPGPU-Sim: *** exit detected ***" in lines
        copy = await http.get(f"/api/sims/{sim['id']}/files/accelsim.log.gz")
        assert gzip.decompress(copy.content).decode() == log  # the local copy is the same log
    await no_scratch_left(scratch)


async def test_the_server_keeps_its_own_limit_for_a_worker_without_one(
    make_server, worker_env, tmp_path, monkeypatch, scratch
):
    monkeypatch.setenv("CASCADE_SIM_LOG_LIMIT_MB", "0")  # the workers': none
    server, trace_id = await spewing_server(make_server, tmp_path, SPEW, sim_log_limit_mb=1)
    async with server.client() as http:
        run = await one_sim(http, trace_id)
        sim = (await finished_run(http, run["id"]))["sims"][0]
        assert sim["state"] == "succeeded" and sim["kernels_done"] == 3, sim
        assert sim["error"].startswith("the server's log limit: ")
        log = (await http.get(f"/api/sims/{sim['id']}/log")).text
        assert len(log) < 1.1 * MIB and "[cascade] the server's log limit of 1 MiB" in log


async def test_a_cancelled_sim_leaves_no_scratch_whatever_it_had_not_sent(
    make_server, worker_env, tmp_path, monkeypatch, scratch
):
    """Before, its unsent spool stayed behind, and with it the whole local copy of its log."""
    monkeypatch.setenv("CASCADE_SIM_LOG_LIMIT_MB", "0")
    server, trace_id = await spewing_server(make_server, tmp_path, {"fake_behaviour": "spew_forever"})
    async with server.client() as http:
        run = await one_sim(http, trace_id)
        await sims_when(http, run["id"], lambda sims: sims[0]["state"] == "running")
        await sims_when(http, run["id"], lambda sims: len(sims[0]["log_tail"]) >= 20)
        assert (await http.post(f"/api/runs/{run['id']}/cancel")).status_code == 200
        sim = (await get_run(http, run["id"]))["sims"][0]
        assert sim["state"] == "cancelled"
        await no_scratch_left(scratch)


async def test_a_log_the_server_never_got_stays_as_the_local_copy_alone(start_worker, tmp_path):
    fake = install_fake_accelsim(tmp_path / "accel-sim", {"SM7_HANGS": {"fake_behaviour": "hang"}})
    trace = make_trace_dir(tmp_path / "trace")
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    worker = start_worker(
        env={"CASCADE_GIVE_UP_S": "2"},
        url=f"http://127.0.0.1:{port}",
        token="t",
        sim_id="sim-000000000001",
        gpu_config="SM7_HANGS",
        trace_dir=str(trace),
        accelsim_dir=str(fake),
        scratch_dir=str(tmp_path / "scratch"),
    )
    assert await exit_status(worker) == 3  # the server stayed unreachable
    [left] = list((tmp_path / "scratch").iterdir())
    assert [p.name for p in left.iterdir()] == ["accelsim.log"]
    assert "kernel_name = _Z6kernel1v" in (left / "accelsim.log").read_text()
    output = worker.stdout.read().decode()
    assert f"the whole log is in {left / 'accelsim.log'}" in output
