"""Issue 19, contract slips: where the server was stricter or vaguer than the spec (heartbeat
`error`, list query parameters, sims given up for silence). Real server, real port, real HTTP."""

from __future__ import annotations

import pytest

from tests.conftest import ready_trace
from tests.helpers import create_run, wait_until


async def sim_state(http, sim_id: str) -> dict:
    return (await http.get(f"/api/sims/{sim_id}/results")).json()["sim"]


async def test_a_succeeded_heartbeat_keeps_its_error_text_as_a_warning(core):
    async with core.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        sim_id = run["sims"][0]["id"]
        warning = "simulator warning: 3 kernels used the fallback timing model"
        resp = await http.post(
            f"/api/sims/{sim_id}/heartbeat", json={"state": "succeeded", "exit_code": 0, "error": warning}
        )
        assert resp.status_code == 200, resp.text
        assert resp.json() == {"state": "succeeded", "cancel": False}
        sim = await sim_state(http, sim_id)
        assert sim["state"] == "succeeded" and sim["error"] == warning and sim["exit_code"] == 0


@pytest.mark.parametrize("path", ["/api/runs", "/api/traces"])
@pytest.mark.parametrize("query", ["token=abc", "_=1733000000000", "status=ready&limit=1", "state=&x="])
async def test_list_routes_ignore_parameters_they_do_not_take(core, path, query):
    async with core.client() as http:
        await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        plain = await http.get(path)
        resp = await http.get(f"{path}?{query}")
    assert resp.status_code == 200, resp.text
    expected = plain.json()[:1] if "limit=1" in query else plain.json()
    assert [item["id"] for item in resp.json()] == [item["id"] for item in expected]


async def test_a_late_heartbeat_to_a_sim_failed_for_silence_is_told_to_stop(make_server, accelsim_dir):
    server = await make_server(accelsim_dir=accelsim_dir, heartbeat_timeout_s=0.2)
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        sim_id = run["sims"][0]["id"]
        first = await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "running"})
        assert first.json() == {"state": "running", "cancel": False}
        failed = await wait_until(lambda: _failed(http, sim_id))  # lost, then failed after 10x
        late = await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "running"})
        assert late.status_code == 200
        assert late.json() == {"state": "failed", "cancel": True}
        after = await sim_state(http, sim_id)
        # Nothing stored changes: the state, the reason and the last heartbeat stay as they were.
        assert {k: after[k] for k in ("state", "error", "last_heartbeat_at", "finished_at")} == {
            k: failed[k] for k in ("state", "error", "last_heartbeat_at", "finished_at")
        }
        assert "no heartbeat" in after["error"]


async def _failed(http, sim_id: str) -> dict | None:
    sim = await sim_state(http, sim_id)
    return sim if sim["state"] == "failed" else None
