"""Issue 31 on a node without the server's data directory (a Slurm node): `cascade worker` is told
where an added GPU config lives, does not find it there, fetches its files by name over the API
(`GET /api/gpu-configs/{name}/files`) and simulates with them."""

from __future__ import annotations

import pytest

from cascade_worker import config_fetch
from cascade_worker.settings import Options
from tests.conftest import TOKEN, ready_trace
from tests.helpers import create_run, exit_status, finished_run
from tests.server.test_added_configs import body
from tests.worker.fakes import install_fake_accelsim, make_trace_dir, write_opcode_headers

pytestmark = pytest.mark.timeout(120)


async def test_a_worker_that_cannot_see_an_added_config_fetches_it_by_name(
    make_server, start_worker, tmp_path
):
    simulator = write_opcode_headers(
        install_fake_accelsim(tmp_path / "accelsim", {"SM7_QV100": {}}), {"volta": 70, "ampere": 80}
    )
    server = await make_server(accelsim_dir=simulator)  # the manual launcher: the worker is ours
    await server.store.traces.put_trace(ready_trace("a100-trace", arch="sm_80", kernels=1))
    make_trace_dir(server.settings.traces_dir / "a100-trace")
    async with server.client() as http:
        assert (await http.post("/api/gpu-configs", json=body())).status_code == 201
        run = await create_run(http, [("LAB_A100", 1)], trace_id="a100-trace")
        sim = run["sims"][0]
        worker = start_worker(
            server,
            sim_id=sim["id"],
            gpu_config="LAB_A100",
            accelsim_dir=str(simulator),
            gpu_config_dir=str(tmp_path / "not-on-this-node"),
            trace_dir=str(server.settings.traces_dir / "a100-trace"),
        )
        assert await exit_status(worker) == 0, worker.stdout.read().decode() if worker.stdout else ""
        assert (await finished_run(http, run["id"]))["sims"][0]["state"] == "succeeded"
        log = (await http.get(f"/api/sims/{sim['id']}/log")).text
        assert "-gpgpu_n_clusters 54" in log  # the simulator read the fetched files
        assert (await http.delete("/api/gpu-configs/LAB_A100")).status_code == 204
    # any config's files can be fetched; one removed since is an error saying so (the sim's error)
    fetched = await config_fetch.fetch(
        Options(url=server.url, token=TOKEN, sim_id="x", gpu_config="SM7_QV100"), tmp_path / "qv100"
    )
    assert (fetched / "gpgpusim.config").read_text().startswith("-gpgpu_compute_capability_major 7")
    with pytest.raises(config_fetch.ConfigFetchError, match="HTTP 404 gpu_config 'LAB_A100' not found"):
        await config_fetch.fetch(
            Options(url=server.url, token=TOKEN, sim_id="x", gpu_config="LAB_A100"), tmp_path / "gone"
        )
