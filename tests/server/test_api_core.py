"""Issue 2: health, auth, traces, GPU configs, runs, cancel, heartbeats, the monitor, restarts."""

from __future__ import annotations

import itertools
import json
import logging
import re
import subprocess
import sys

import pytest

from cascade_core.models import SIM_STATES, SIM_TRANSITIONS, TERMINAL_SIM_STATES, run_state
from tests.conftest import TOKEN, ready_trace
from tests.helpers import ManualClock, create_run, post_run, wait_until

ID = re.compile(r"^(run|sim)-[0-9a-f]{12}$")
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")

PROTECTED = [
    ("GET", "/api/traces"),
    ("GET", "/api/traces/x"),
    ("GET", "/api/gpu-configs"),
    ("POST", "/api/runs"),
    ("GET", "/api/runs"),
    ("GET", "/api/runs/run-000000000000"),
    ("POST", "/api/runs/run-000000000000/cancel"),
    ("GET", "/api/runs/run-000000000000/comparison"),
    ("GET", "/api/runs/run-000000000000/kernels"),
    ("GET", "/api/runs/run-000000000000/step-timelines"),
    ("GET", "/api/runs/run-000000000000/results"),
    ("GET", "/api/sims/sim-000000000000/results"),
    ("GET", "/api/sims/sim-000000000000/log"),
    ("GET", "/api/runs/run-000000000000/files"),
    ("GET", "/api/runs/run-000000000000/perfetto"),
    ("GET", "/api/sims/sim-000000000000/files"),
    ("GET", "/api/sims/sim-000000000000/files/a.txt"),
    ("GET", "/api/runs/run-000000000000/events"),
    ("POST", "/api/sims/sim-000000000000/heartbeat"),
    ("POST", "/api/sims/sim-000000000000/logs"),
    ("POST", "/api/sims/sim-000000000000/step-timeline"),
    ("PUT", "/api/sims/sim-000000000000/files/a.txt"),
]


# --- health and auth ---------------------------------------------------------------------------


async def test_health_is_open_and_reports_auth(server):
    async with server.client(token=None) as http:
        resp = await http.get("/api/health")
    assert resp.status_code == 200
    assert resp.json() == {"ok": True, "auth": True, "workspace": None, "s3_endpoint": None, "s3_error": None}


async def test_health_without_auth_and_with_workspace(make_server):
    server = await make_server(no_auth=True, token=None, workspace="acme-lab")
    async with server.client(token=None) as http:
        assert (await http.get("/api/health")).json()["auth"] is False
        assert (await http.get("/api/health")).json()["workspace"] == "acme-lab"
        assert (await http.get("/api/traces")).status_code == 200  # no token needed


@pytest.mark.parametrize("method,path", PROTECTED)
async def test_every_route_needs_the_token(server, method, path):
    async with server.client(token=None) as http:
        cases = {
            "missing": {},
            "not bearer": {"Authorization": f"Basic {TOKEN}"},
            "bearer without token": {"Authorization": "Bearer"},
            "wrong": {"Authorization": "Bearer not-the-token"},
        }
        for case, headers in cases.items():
            resp = await http.request(method, path, headers=headers)
            assert resp.status_code == 401, (case, resp.text)
            assert resp.headers["WWW-Authenticate"] == "Bearer"
            assert isinstance(resp.json()["detail"], str) and resp.json()["detail"]
            assert TOKEN not in resp.text


async def test_query_token_only_on_events(core):
    async with core.client() as http:
        run = await create_run(http)
    async with core.client(token=None) as http:
        assert (await http.get("/api/traces", params={"token": TOKEN})).status_code == 401
        assert (await http.get(f"/api/runs/{run['id']}", params={"token": TOKEN})).status_code == 401
        bad = await http.get(f"/api/runs/{run['id']}/events", params={"token": "wrong"})
        assert bad.status_code == 401 and bad.headers["WWW-Authenticate"] == "Bearer"
        async with http.stream("GET", f"/api/runs/{run['id']}/events", params={"token": TOKEN}) as resp:
            assert resp.status_code == 200
            first = await anext(resp.aiter_lines())
            assert json.loads(first.removeprefix("data: "))["type"] == "snapshot"


@pytest.mark.parametrize("path", ["/api/nope", "/api/runs/x/nope", "/api/sims", "/api/"])
async def test_unknown_api_paths_are_404_without_auth(server, path):
    async with server.client(token=None) as http:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            resp = await http.get(path, headers=headers)
            assert resp.status_code == 404
            assert resp.json() == {"detail": "Not Found"}


async def test_token_never_logged(server, caplog):
    caplog.set_level(logging.DEBUG)
    async with server.client() as http:
        await http.get("/api/traces")
        await http.post("/api/runs", content=b"{not json", headers={"Content-Type": "application/json"})
    async with server.client(token="wrong-token-xyz") as http:
        await http.get("/api/traces")
    assert TOKEN not in caplog.text and "wrong-token-xyz" not in caplog.text


def test_models_import_nothing_heavy():
    code = (
        "import sys, cascade_core.models; heavy = [m for m in ('aiohttp', 'aiosqlite', 'boto3', 'textual')"
        " if m in sys.modules]; print(heavy); sys.exit(1 if heavy else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


# --- traces and configs ------------------------------------------------------------------------


async def test_traces_list_newest_first_and_detail(core):
    async with core.client() as http:
        listed = (await http.get("/api/traces")).json()
        assert [t["id"] for t in listed] == ["turing", "tinyformer-step-sm70"]
        assert "kernels" not in listed[0] and "metadata" not in listed[0]
        assert STAMP.match(listed[0]["created_at"]) and STAMP.match(listed[0]["updated_at"])
        detail = (await http.get("/api/traces/tinyformer-step-sm70")).json()
        assert detail["metadata"] == {"status": "ok"} and len(detail["kernels"]) == 15
        assert detail["kernels"][0]["grid"] == [1, 1, 1]
        missing = await http.get("/api/traces/nope")
        assert missing.status_code == 404 and missing.json() == {"detail": "trace nope not found"}


async def test_gpu_configs_scanned_sorted_and_skipping_unreadable(core):
    async with core.client() as http:
        configs = (await http.get("/api/gpu-configs")).json()
    assert configs == [
        {
            "name": "SM6_TITANX",
            "arch": "sm_61",
            "core_clock_mhz": 1417.0,
            "added": False,
            "power_model": False,
        },
        {
            "name": "SM75_RTX2060",
            "arch": "sm_75",
            "core_clock_mhz": 1365.0,
            "added": False,
            "power_model": False,
        },
        {
            "name": "SM7_QV100",
            "arch": "sm_70",
            "core_clock_mhz": 1132.0,
            "added": False,
            "power_model": False,
        },
        {
            "name": "SM7_TITANV",
            "arch": "sm_70",
            "core_clock_mhz": 1200.0,
            "added": False,
            "power_model": False,
        },
    ]


# --- runs ---------------------------------------------------------------------------------------


async def test_create_run_fans_out_sims(core):
    async with core.client() as http:
        run = await create_run(
            http, [{"gpu_config": "SM7_TITANV", "count": 1}, {"gpu_config": "SM7_QV100", "count": 2}]
        )
        assert ID.match(run["id"]) and run["trace_id"] == "tinyformer-step-sm70"
        assert run["state"] == "active" and run["sample"] is False and run["replay"] is False
        assert run["entries"] == [
            {"gpu_config": "SM7_TITANV", "count": 1},
            {"gpu_config": "SM7_QV100", "count": 2},
        ]
        assert run["trace"]["id"] == "tinyformer-step-sm70" and "kernels" not in run["trace"]
        sims = run["sims"]
        assert [(s["gpu_config"], s["replica"]) for s in sims] == [
            ("SM7_QV100", 0),
            ("SM7_QV100", 1),
            ("SM7_TITANV", 0),
        ]
        for sim in sims:
            assert ID.match(sim["id"]) and sim["run_id"] == run["id"]
            assert sim["state"] in ("pending", "launching") and sim["kernels_total"] == 15
            assert sim["kernels_done"] == 0 and sim["log_tail"] == [] and sim["started_at"] is None
            assert sim["latest"] == {
                "gpu_tot_sim_cycle": None,
                "gpu_tot_sim_insn": None,
                "gpu_tot_ipc": None,
                "sim_rate_ips": None,
            }
        assert sum(run["sim_counts"].values()) == 3

        # the manual launcher moves every sim to launching, in the background
        async def all_launching():
            got = (await http.get(f"/api/runs/{run['id']}")).json()
            return got if got["sim_counts"] == {"launching": 3} else None

        detail = await wait_until(all_launching)
        assert detail["sims"][0]["launcher_ref"] is None


@pytest.mark.parametrize(
    "trace_id,config,status,detail",
    [
        ("nope", "SM7_QV100", 404, "trace nope not found"),
        ("tinyformer-step-sm70", "SM9_NOPE", 422, "unknown gpu_config"),
        ("tinyformer-step-sm70", "SM75_RTX2060", 422, "is sm_75, but trace tinyformer-step-sm70 is sm_70"),
        ("turing", "SM7_QV100", 422, "is sm_70, but trace turing is sm_75"),
    ],
)
async def test_create_run_errors_with_a_sentence(core, trace_id, config, status, detail):
    async with core.client() as http:
        resp = await post_run(http, [(config, 1)], trace_id)
    assert resp.status_code == status
    assert isinstance(resp.json()["detail"], str) and detail in resp.json()["detail"]


@pytest.mark.parametrize(
    "body,loc",
    [
        ({"trace_id": "tinyformer-step-sm70", "entries": []}, ["body", "entries"]),
        (
            {"trace_id": "tinyformer-step-sm70", "entries": [{"gpu_config": "SM7_QV100", "count": 0}]},
            ["body", "entries", 0, "count"],
        ),
        (
            {"trace_id": "tinyformer-step-sm70", "entries": [{"gpu_config": "SM7_QV100", "count": 65}]},
            ["body", "entries", 0, "count"],
        ),
        ({"entries": [{"gpu_config": "SM7_QV100", "count": 1}]}, ["body", "trace_id"]),
        (
            {"trace_id": "tinyformer-step-sm70", "entries": [{"gpu_config": "SM7_QV100", "count": "many"}]},
            ["body", "entries", 0, "count"],
        ),
    ],
)
async def test_create_run_invalid_body_is_a_422_list(core, body, loc):
    async with core.client() as http:
        resp = await http.post("/api/runs", json=body)
    assert resp.status_code == 422
    detail = resp.json()["detail"]
    assert isinstance(detail, list) and detail
    assert detail[0]["loc"] == loc and detail[0]["msg"] and detail[0]["type"]
    assert set(detail[0]) == {"loc", "msg", "type"}


async def test_create_run_counts_at_the_boundaries(core):
    async with core.client() as http:
        run = await create_run(
            http, [{"gpu_config": "SM7_QV100", "count": 64}, {"gpu_config": "SM7_TITANV", "count": 1}]
        )
    assert len(run["sims"]) == 65


async def test_create_run_refuses_traces_not_ready_and_samples(core):
    await core.store.traces.put_trace(ready_trace("uploading-one", state="uploading"))
    await core.store.traces.put_trace(ready_trace("the-sample", sample=True))
    async with core.client() as http:
        for trace_id, words in (("uploading-one", "is uploading, not ready"), ("the-sample", "is a sample")):
            resp = await http.post(
                "/api/runs", json={"trace_id": trace_id, "entries": [{"gpu_config": "SM7_QV100", "count": 1}]}
            )
            assert resp.status_code == 409 and words in resp.json()["detail"]


@pytest.mark.parametrize(
    "kwargs,status,words",
    [
        ({"content": b"{not json", "headers": {"Content-Type": "application/json"}}, 400, "not valid JSON"),
        ({"content": b"[1, 2]", "headers": {"Content-Type": "application/json"}}, 422, "object"),
        (
            {"content": b"trace_id=x", "headers": {"Content-Type": "application/x-www-form-urlencoded"}},
            415,
            "JSON",
        ),
        ({"content": b"{}", "headers": {}}, 415, "JSON"),
    ],
)
async def test_bad_bodies_are_clear_4xx(core, kwargs, status, words):
    async with core.client() as http:
        resp = await http.post("/api/runs", **kwargs)
    assert resp.status_code == status
    assert words in json.dumps(resp.json()["detail"])


async def test_oversized_body_is_413(make_server):
    server = await make_server(max_json_bytes=1024)
    async with server.client() as http:
        resp = await http.post("/api/sims/sim-000000000000/logs", json={"seq": 0, "lines": ["x" * 2000]})
    assert resp.status_code == 413 and "too large" in resp.json()["detail"]


async def test_runs_list_newest_first_with_counts(core):
    async with core.client() as http:
        first = await create_run(http)
        second = await create_run(http, [{"gpu_config": "SM7_TITANV", "count": 3}])
        runs = (await http.get("/api/runs")).json()
        assert [r["id"] for r in runs] == [second["id"], first["id"]]
        assert "sims" not in runs[0] and "trace" not in runs[0]
        assert sum(runs[0]["sim_counts"].values()) == 3
        missing = await http.get("/api/runs/run-000000000000")
        assert missing.status_code == 404 and missing.json() == {"detail": "run run-000000000000 not found"}


async def test_cancel_is_idempotent_and_tells_the_simulator(core):
    async with core.client() as http:
        run = await create_run(http)
        sim_id = run["sims"][0]["id"]
        ack = (await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "running"})).json()
        assert ack == {"state": "running", "cancel": False}
        done = await http.post(f"/api/runs/{run['id']}/cancel")
        assert done.status_code == 200
        body = done.json()
        assert body["state"] == "cancelled" and body["sim_counts"] == {"cancelled": 2}
        assert all(s["finished_at"] for s in body["sims"])
        again = (await http.post(f"/api/runs/{run['id']}/cancel")).json()
        assert again["sims"] == body["sims"]
        ack = (await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "running"})).json()
        assert ack == {"state": "cancelled", "cancel": True}
        ack = (
            await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "succeeded", "exit_code": 0})
        ).json()
        assert ack == {"state": "cancelled", "cancel": True}
        assert (await http.post("/api/runs/run-000000000000/cancel")).status_code == 404


# --- heartbeats and the state machine ----------------------------------------------------------


async def set_state(server, sim_id: str, state: str) -> None:
    """Test setup only: put a sim straight into `state`."""
    async with server.store.db.write() as tx:
        await tx.conn.execute("UPDATE sims SET state=?, finished_at=NULL WHERE id=?", (state, sim_id))


async def test_heartbeats_follow_sim_transitions_exactly(core):
    async with core.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 21}])
        pairs = list(itertools.product(SIM_STATES, ("running", "succeeded", "failed")))
        for sim, (start, beat) in zip(run["sims"], pairs):
            await wait_until(lambda sim=sim: _state_is(http, sim["id"], "launching"))
            await set_state(core, sim["id"], start)
            resp = await http.post(
                f"/api/sims/{sim['id']}/heartbeat", json={"state": beat, "exit_code": 3, "error": "boom"}
            )
            assert resp.status_code == 200
            allowed = beat in SIM_TRANSITIONS[start]
            expected = beat if allowed else start
            # A sim the server failed that still reports work is told to stop, like a cancelled one.
            stop = expected == "cancelled" or (start == "failed" and beat == "running")
            assert resp.json() == {"state": expected, "cancel": stop}, (start, beat)
            got = (await http.get(f"/api/runs/{run['id']}")).json()
            after = next(s for s in got["sims"] if s["id"] == sim["id"])
            assert after["state"] == expected
            if start in TERMINAL_SIM_STATES:
                assert after["last_heartbeat_at"] is None  # a finished sim is left as it was
            else:
                assert STAMP.match(after["last_heartbeat_at"])
            if allowed and beat in TERMINAL_SIM_STATES:
                assert (
                    after["exit_code"] == 3 and after["error"] == "boom" and STAMP.match(after["finished_at"])
                )
            if allowed and beat == "running":
                assert after["error"] is None and after["started_at"] == after["last_heartbeat_at"]


async def _state_is(http, sim_id, state):
    resp = await http.get(f"/api/sims/{sim_id}/results")
    return resp.json()["sim"]["state"] == state


async def test_heartbeat_errors(core):
    async with core.client() as http:
        run = await create_run(http)
        sim_id = run["sims"][0]["id"]
        missing = await http.post("/api/sims/sim-000000000000/heartbeat", json={"state": "running"})
        assert missing.status_code == 404 and missing.json() == {"detail": "sim sim-000000000000 not found"}
        bad = await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "cancelled"})
        assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["body", "state"]


async def test_running_heartbeat_sets_started_once_and_final_sets_finished(core):
    async with core.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        sim_id = run["sims"][0]["id"]
        await wait_until(lambda: _state_is(http, sim_id, "launching"))
        await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "running"})
        first = (await http.get(f"/api/sims/{sim_id}/results")).json()["sim"]
        await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "running"})
        second = (await http.get(f"/api/sims/{sim_id}/results")).json()["sim"]
        assert second["started_at"] == first["started_at"]
        assert second["last_heartbeat_at"] > first["last_heartbeat_at"]
        ack = (
            await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "succeeded", "exit_code": 0})
        ).json()
        assert ack == {"state": "succeeded", "cancel": False}
        final = (await http.get(f"/api/runs/{run['id']}")).json()
        assert final["state"] == "succeeded" and final["sims"][0]["exit_code"] == 0
        assert final["sims"][0]["finished_at"] == final["sims"][0]["last_heartbeat_at"]


def test_run_state_every_case():
    assert run_state(["pending"]) == "active"
    assert run_state(["succeeded", "running"]) == "active"
    assert run_state(["succeeded", "lost"]) == "active"
    assert run_state(["succeeded", "succeeded"]) == "succeeded"
    assert run_state(["succeeded", "failed"]) == "partial"
    assert run_state(["succeeded", "cancelled"]) == "partial"
    assert run_state(["failed", "failed"]) == "failed"
    assert run_state(["failed", "cancelled"]) == "cancelled"
    assert run_state(["cancelled"]) == "cancelled"


async def test_silent_sims_become_lost_then_failed(make_server, accelsim_dir):
    clock = ManualClock()
    server = await make_server(clock=clock, accelsim_dir=accelsim_dir, heartbeat_timeout_s=0.3)
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http)
        talking, silent = run["sims"][0]["id"], run["sims"][1]["id"]

        async def sim(sim_id):
            return (await http.get(f"/api/sims/{sim_id}/results")).json()["sim"]

        await wait_until(lambda: _state_is(http, silent, "launching"))
        await clock.advance(0.5)
        await wait_until(lambda: _state_is(http, silent, "lost"))
        lost = await sim(silent)
        assert lost["error"] == "no heartbeat for 0.3 s" and lost["finished_at"] is None
        # a running heartbeat brings a lost sim back and clears the error
        await wait_until(lambda: _state_is(http, talking, "lost"))
        ack = (await http.post(f"/api/sims/{talking}/heartbeat", json={"state": "running"})).json()
        assert ack["state"] == "running" and (await sim(talking))["error"] is None
        await clock.advance(3.0)
        await wait_until(lambda: _state_is(http, silent, "failed"))
        failed = await sim(silent)
        assert "no heartbeat for 3 s" in failed["error"] and failed["finished_at"]


async def test_everything_survives_a_restart(core):
    async with core.client() as http:
        run = await create_run(http)
        sim_id = run["sims"][0]["id"]
        await wait_until(lambda: _state_is(http, sim_id, "launching"))
        await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "running"})
        before = (await http.get(f"/api/runs/{run['id']}")).json()
        traces = (await http.get("/api/traces")).json()
    await core.restart()
    async with core.client() as http:
        assert (await http.get(f"/api/runs/{run['id']}")).json() == before
        assert (await http.get("/api/traces")).json() == traces
        assert (await core.store.db.schema_version()) >= 1
