"""Issue 19: a step timeline the server accepts (204) never breaks a reader afterwards. Uploads
whose steps Perfetto cannot draw (times NaN, infinite, negative or absurd; indexes that are not
numbers or repeat; comparisons of steps the timeline lacks) are a 422; what is accepted draws.
Real server, real port, real HTTP."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers import create_run

SUMMARY = {"per_kind": {}, "simulation": {"coverage": {"kernels": 1, "simulated_kernels": 1}}}


def simulated(*steps: Any) -> dict:
    return {"steps": list(steps), "summary": SUMMARY}


def step(index=0, wall_ns=5000.0, **more) -> dict:
    return {
        "index": index,
        "name": f"ProfilerStep#{index}",
        "kind": "step",
        "wall_ns": wall_ns,
        "gpu_busy_ns": 4000.0,
        **more,
    }


# Raw JSON text: NaN and Infinity are literals an HTTP client's encoder would refuse to write.
BAD = {
    "NaN wall": '{"simulated": {"steps": [{"index": 0, "wall_ns": NaN}], "summary": {}}}',
    "Infinity wall": '{"simulated": {"steps": [{"index": 0, "wall_ns": Infinity}], "summary": {}}}',
    "1e308 wall": json.dumps({"simulated": simulated(step(0, 1e308))}),
    "a 10^40 integer wall": '{"simulated": {"steps": [{"index": 0, "wall_ns": 1'
    + "0" * 40
    + '}], "summary": {}}}',
    "negative wall": json.dumps({"simulated": simulated(step(0, -5))}),
    "a string wall": json.dumps({"simulated": simulated(step(0, "5"))}),
    "a true wall": json.dumps({"simulated": simulated(step(0, True))}),
    "no wall": json.dumps({"simulated": simulated({"index": 0})}),
    "negative busy": json.dumps({"simulated": simulated(step(0, gpu_busy_ns=-1))}),
    "a list index": json.dumps({"simulated": simulated(step([1]))}),
    "a float index": json.dumps({"simulated": simulated(step(1.5))}),
    "a negative index": json.dumps({"simulated": simulated(step(-1))}),
    "repeated indexes": json.dumps({"simulated": simulated(step(0), step(0))}),
    "a step that is not an object": json.dumps({"simulated": simulated(5)}),
    "an unknown kind": json.dumps({"simulated": simulated(step(0, kind="warmup"))}),
    "a name that is an object": json.dumps({"simulated": simulated(step(0, name={"a": 1}))}),
    "no summary": json.dumps({"simulated": {"steps": [step(0)]}}),
    "compare steps not a list": json.dumps({"simulated": simulated(step(0)), "compare": {"steps": 5}}),
    "compare index an object": json.dumps(
        {"simulated": simulated(step(0)), "compare": {"steps": [{"index": {}}]}}
    ),
    "compare of a step it lacks": json.dumps(
        {"simulated": simulated(step(0)), "compare": {"steps": [{"index": 7}]}}
    ),
    "compare error infinite": '{"simulated": {"steps": [{"index": 0, "wall_ns": 5}], "summary": {}}, '
    '"compare": {"steps": [{"index": 0, "wall_error_pct": -Infinity}]}}',
    "compare wall negative": json.dumps(
        {"simulated": simulated(step(0)), "compare": {"steps": [{"index": 0, "real_wall_ns": -3}]}}
    ),
}


@pytest.mark.parametrize("name", BAD)
async def test_a_step_timeline_perfetto_cannot_draw_is_refused_and_nothing_breaks(core, name):
    async with core.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        sim_id = run["sims"][0]["id"]
        resp = await http.post(
            f"/api/sims/{sim_id}/step-timeline",
            content=BAD[name],
            headers={"Content-Type": "application/json"},
        )
        assert resp.status_code == 422, resp.text
        [error] = resp.json()["detail"]
        assert error["msg"].count("\n") == 0 and len(error["msg"]) < 300
        assert (await http.get(f"/api/runs/{run['id']}/step-timelines")).json() == []
        perfetto = await http.get(f"/api/runs/{run['id']}/perfetto")
        assert perfetto.status_code == 200
        json.loads(perfetto.text, parse_constant=_refuse)  # strict JSON: no NaN or Infinity


async def test_an_accepted_step_timeline_draws_its_steps(core):
    body = {
        "simulated": {**simulated(step(0, 5000.0), step(1, 7000, kind="decode")), "kernels_extra": [1, 2]},
        "compare": {
            "steps": [{"index": 1, "real_wall_ns": 6000.0, "wall_error_pct": 16.7, "other": "kept"}],
            "summary": {"wall_ns": {"count": 1}},
        },
    }
    async with core.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        sim_id = run["sims"][0]["id"]
        resp = await http.post(f"/api/sims/{sim_id}/step-timeline", json=body)
        assert resp.status_code == 204, resp.text
        [stored] = (await http.get(f"/api/runs/{run['id']}/step-timelines")).json()
        assert stored["simulated"] == body["simulated"] and stored["compare"] == body["compare"]  # as sent
        trace = (await http.get(f"/api/runs/{run['id']}/perfetto")).json()
    slices = [e for e in trace["traceEvents"] if e.get("cat") == "step"]
    assert [(s["ts"], s["dur"]) for s in slices] == [(0.0, 5.0), (5.0, 7.0)]
    assert slices[1]["args"]["wall_error_pct"] == 16.7


def _refuse(constant: str):
    raise ValueError(f"{constant} in the Perfetto trace")
