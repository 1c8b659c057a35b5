"""Issue 32, item 2, on the server: each sim's stored log has a limit (CASCADE_SIM_LOG_LIMIT_MB),
whoever sends it. Past it the server stores only kernel launches, stats blocks, failures and
Cascade's notes; every kernel is still parsed; the log and the sim's error say so; a restarted
server does not grant a second limit. (`-gpgpu_runtime_stat 1:15` put 245 MB on the server in two
minutes.)"""

from __future__ import annotations

import pytest

from tests.conftest import ready_trace
from tests.helpers import create_run, recorded_log
from tests.worker.test_log_limit import PERIODIC, flooded

MIB = 2**20


@pytest.fixture
async def limited(make_server):
    server = await make_server(sim_log_limit_mb=1)
    await server.store.traces.put_trace(ready_trace())
    return server


async def send(http, sim_id: str, lines: list[str], first_seq: int = 0, size: int = 1000) -> int:
    seq = first_seq
    for start in range(0, len(lines), size):
        resp = await http.post(
            f"/api/sims/{sim_id}/logs", json={"seq": seq, "lines": lines[start : start + size]}
        )
        assert resp.status_code == 204, resp.text
        seq += 1
    return seq


async def running_sim(http) -> str:
    run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
    sim_id = run["sims"][0]["id"]
    assert (await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "running"})).status_code == 200
    return sim_id


async def test_past_its_limit_a_sim_s_log_keeps_its_kernels_and_says_what_it_left_out(limited):
    log = recorded_log("SM7_QV100")
    flood = flooded(log, 10_000)  # ~1 MB of periodic lines while each kernel runs
    async with limited.client() as http:
        sim_id = await running_sim(http)
        await send(http, sim_id, flood)
        stored = (await http.get(f"/api/sims/{sim_id}/log")).text
        notes = [line for line in stored.splitlines() if "the server's log limit" in line]
        assert notes == [
            "[cascade] the server's log limit of 1 MiB (CASCADE_SIM_LOG_LIMIT_MB) is passed: from here this "
            "sim's stored log keeps kernel launches, stats blocks, failures and Cascade's notes only"
        ]
        blocks = sum(len(x) + 1 for x in log)  # the whole recording: its blocks and all
        assert len(stored) < MIB + blocks + 64 * 1024 < sum(len(x) + 1 for x in flood) / 2
        assert all(line in stored for line in log if line.startswith(("kernel_name = ", "launching kernel")))
        results = (await http.get(f"/api/sims/{sim_id}/results")).json()
        blocks_in_log = sum(1 for line in log if line.startswith("kernel_name = "))
        assert len(results["kernels"]) == blocks_in_log and all(
            k["gpu_sim_cycle"] for k in results["kernels"]
        )

        done = await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "succeeded", "exit_code": 0})
        assert done.status_code == 200
        sim = (await http.get(f"/api/runs/{results['sim']['run_id']}")).json()["sims"][0]
        assert sim["state"] == "succeeded"
        assert sim["error"].startswith("the server's log limit: ") and sim["error"].endswith(
            "left out past the log limit of 1 MiB (CASCADE_SIM_LOG_LIMIT_MB=1)"
        )


async def test_a_worker_s_own_error_keeps_its_words_and_gains_the_server_s(limited):
    async with limited.client() as http:
        sim_id = await running_sim(http)
        await send(http, sim_id, [PERIODIC[0]] * 20_000)
        await http.post(
            f"/api/sims/{sim_id}/heartbeat", json={"state": "failed", "error": "deadlock detected"}
        )
        run_id = (await http.get(f"/api/sims/{sim_id}/results")).json()["sim"]["run_id"]
        sim = (await http.get(f"/api/runs/{run_id}")).json()["sims"][0]
        assert sim["error"].startswith("deadlock detected; the server's log limit: ")


async def test_a_restarted_server_counts_the_log_it_stored(limited):
    async with limited.client() as http:
        sim_id = await running_sim(http)
        seq = await send(http, sim_id, [PERIODIC[1]] * 12_000)  # past 1 MiB
        before = len((await http.get(f"/api/sims/{sim_id}/log")).text)
    await limited.restart()
    async with limited.client() as http:
        await send(http, sim_id, [PERIODIC[1]] * 12_000 + ["launching kernel name: k uid: 1"], first_seq=seq)
        after = (await http.get(f"/api/sims/{sim_id}/log")).text
        assert len(after) - before < 1024 and after.endswith("launching kernel name: k uid: 1\n")


async def test_no_limit_keeps_every_line(make_server):
    server = await make_server(sim_log_limit_mb=0)
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        sim_id = await running_sim(http)
        await send(http, sim_id, [PERIODIC[1]] * 20_000)
        assert len((await http.get(f"/api/sims/{sim_id}/log")).text) == 20_000 * (len(PERIODIC[1]) + 1)


async def test_a_chunk_sent_again_counts_once(limited):
    """A worker sends a chunk again after a timeout, or while its sim is still `pending` (409):
    the log limit counts it once."""
    line = PERIODIC[1]
    per_chunk = int(0.3 * MIB) // (len(line) + 1)
    async with limited.client() as http:
        sim_id = await running_sim(http)
        for seq in (0, 0, 0, 1, 1, 2):
            resp = await http.post(f"/api/sims/{sim_id}/logs", json={"seq": seq, "lines": [line] * per_chunk})
            assert resp.status_code == 204
        stored = (await http.get(f"/api/sims/{sim_id}/log")).text
        assert stored == (line + "\n") * per_chunk * 3 and "[cascade]" not in stored
