"""Issue 19: what a log says must never keep its chunk from being stored. A stats value past
SQLite's INTEGER range (2^63 and more, as an integer or as a float) once made every retry of the
chunk a 500, so the sim's log stopped there for good."""

from __future__ import annotations

import pytest

from tests.helpers import create_run

HUGE = ["1e300", "99999999999999999999999", "18446744073709551617", "9223372036854775808", "-1e300"]


def stats_block(cycle: str, uid: str, insn: str) -> list[str]:
    return [
        "kernel_name = _Z3fooPf",
        f"kernel_launch_uid = {uid}",
        f"gpu_sim_cycle = {cycle}",
        f"gpu_sim_insn = {insn}",
        "gpu_ipc = 2.0",
        "gpu_tot_sim_cycle = 9000",
        "gpgpu_silicon_slowdown = 368369x",
    ]


@pytest.mark.parametrize("huge", HUGE)
async def test_a_count_past_sqlite_s_integers_is_stored_as_no_count(core, huge: str) -> None:
    async with core.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        sim_id = run["sims"][0]["id"]
        for field in range(3):
            values = ["100", "7", "300"]
            values[field] = huge
            seq = field
            resp = await http.post(
                f"/api/sims/{sim_id}/logs", json={"seq": seq, "lines": stats_block(*values)}
            )
            assert resp.status_code == 204, resp.text
        kernels = (await http.get(f"/api/sims/{sim_id}/results")).json()["kernels"]
        assert [(k["gpu_sim_cycle"], k["kernel_launch_uid"], k["gpu_sim_insn"]) for k in kernels] == [
            (None, 7, 300),
            (100, None, 300),
            (100, 7, None),
        ]
        # The value itself stays in the kernel's stats, as the log said it.
        assert [type(k["stats"]["gpu_sim_cycle"]) for k in kernels] == [float, float, float]
        sims = (await http.get(f"/api/runs/{run['id']}")).json()["sims"]
        assert sims[0]["kernels_done"] == 3


async def test_a_chunk_too_far_ahead_is_refused_and_parking_is_bounded(core) -> None:
    # Issue 19: 20,000 parked chunks of one sim made every append 75 times slower. A sim may park
    # only chunks less than MAX_AHEAD past the chunk it waits for; one further is a 409.
    from cascade_server.ingest.chunk_order import MAX_AHEAD

    async with core.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        url = f"/api/sims/{run['sims'][0]['id']}/logs"
        refused = await http.post(url, json={"seq": MAX_AHEAD, "lines": ["too far"]})
        assert refused.status_code == 409
        assert refused.json()["detail"] == (
            f"seq {MAX_AHEAD} is {MAX_AHEAD} chunks past seq 0, which this "
            f"sim's log waits for; at most {MAX_AHEAD - 1} may wait: send seq 0 first"
        )
        assert (await http.post(url, json={"seq": MAX_AHEAD - 1, "lines": ["parked"]})).status_code == 204
        assert (await http.post(url, json={"seq": 0, "lines": ["first"]})).status_code == 204
        # The window moved on with the log: seq MAX_AHEAD now waits like any other.
        assert (
            await http.post(url, json={"seq": MAX_AHEAD, "lines": ["now close enough"]})
        ).status_code == 204
        assert (
            await http.get(f"{url.removesuffix('/logs')}/log")
        ).text == "first\nparked\nnow close enough\n"
