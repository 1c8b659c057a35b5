"""Step timelines of any shape (issues 19 and 32). The spec checks only that `simulated` has a
`steps` list and a `summary` object (and that `compare` is an object or null), and stores both as
they are: everything else is accepted (204), and every reader of a stored timeline takes it,
never breaking (the step-timelines list, the Perfetto trace as strict JSON, the UI's step pane,
the accuracy report, `cascade compare`). Real server, real port, real HTTP."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from cascade_core.models import SimStepTimeline
from cascade_core.timeline.compare import compare
from cascade_core.timeline.formats import CorrectedTimeline, MeasuredKernel, MeasuredStep
from cascade_tui.views.chart import plain
from cascade_tui.views.step_chart import step_lines
from tests.conftest import ready_trace
from tests.helpers import create_run, recorded_kernel_names, recorded_log, store_real_timing

SUMMARY = {"per_kind": {}, "simulation": {"coverage": {"kernels": 1, "simulated_kernels": 1}}}


def simulated(*steps: Any, summary: Any = SUMMARY) -> dict:
    return {"steps": list(steps), "summary": summary}


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
ACCEPTED = {
    "the issue's example": '{"simulated": {"steps": [{"i": 1}], "summary": {"x": 1}}}',
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
    "a step that is not an object": json.dumps({"simulated": simulated(5, "x", None)}),
    "an unknown kind": json.dumps({"simulated": simulated(step(0, kind="warmup"))}),
    "a name that is an object": json.dumps({"simulated": simulated(step(0, name={"a": 1}))}),
    "a summary of odd shapes": json.dumps(
        {
            "simulated": simulated(
                step(0),
                summary={"per_kind": {"step": 5, "decode": {"wall_ns": "x"}}, "simulation": {"coverage": []}},
            ),
            "compare": {"summary": {"wall_ns": {"count": "many", "mean_abs_error_pct": 1e300}}},
        }
    ),
    "compare steps not a list": json.dumps({"simulated": simulated(step(0)), "compare": {"steps": 5}}),
    "compare summary a list": json.dumps({"simulated": simulated(step(0)), "compare": {"summary": [1]}}),
    "compare index an object": json.dumps(
        {"simulated": simulated(step(0)), "compare": {"steps": [{"index": {}}]}}
    ),
    "compare of a step it lacks": json.dumps(
        {"simulated": simulated(step(0)), "compare": {"steps": [{"index": 7}]}}
    ),
    "compare error infinite": '{"simulated": {"steps": [{"index": 0, "wall_ns": 5}], "summary": {}}, '
    '"compare": {"steps": [{"index": 0, "wall_error_pct": -Infinity}], '
    '"summary": {"wall_ns": {"count": 1, "mean_abs_error_pct": NaN}}}}',
    "compare wall negative": json.dumps(
        {"simulated": simulated(step(0)), "compare": {"steps": [{"index": 0, "real_wall_ns": -3}]}}
    ),
    "requests of odd shapes": json.dumps(
        {"simulated": {**simulated(step(0)), "requests": [5, {"index": [1], "steps": 3}, {"steps": [[0]]}]}}
    ),
}

REFUSED = {
    "no steps": ({"simulated": {"summary": {}}}, "simulated lacks a steps list"),
    "steps not a list": ({"simulated": {"steps": {"0": 1}, "summary": {}}}, "simulated lacks a steps list"),
    "no summary": ({"simulated": {"steps": []}}, "simulated lacks a summary object"),
    "a summary list": ({"simulated": {"steps": [], "summary": []}}, "simulated lacks a summary object"),
    "simulated a list": ({"simulated": []}, "Input should be an object"),
    "compare a list": ({"simulated": simulated(), "compare": []}, "Input should be an object"),
}


@pytest.fixture
async def timed(make_server, accelsim_dir):
    """A server whose trace has real timing and a step timeline: every reader reads its uploads."""
    server = await make_server(accelsim_dir=accelsim_dir)
    trace = ready_trace(has_step_timeline=True)
    names = recorded_kernel_names()
    for kernel, name in zip(trace.kernels, names):
        kernel.name = name
    real = [{"kernel_id": n + 1, "duration_ns": 1000.0 * (n + 1)} for n in range(15)]
    assert (await store_real_timing(server.store, trace, real)).has_real_timing
    return server


async def finished_sim(http) -> tuple[dict, str]:
    run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
    sim_id = run["sims"][0]["id"]
    await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "running"})
    assert (
        await http.post(f"/api/sims/{sim_id}/logs", json={"seq": 0, "lines": recorded_log("SM7_QV100")})
    ).status_code == 204
    await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "succeeded", "exit_code": 0})
    return run, sim_id


@pytest.mark.parametrize("name", ACCEPTED)
async def test_any_step_timeline_the_spec_takes_is_stored_and_every_reader_reads_it(timed, name):
    """Issue 32: `{"simulated": {"steps": [{"i": 1}], "summary": {"x": 1}}}` was a 422; the spec
    answers 204 and stores it as it is."""
    async with timed.client() as http:
        run, sim_id = await finished_sim(http)
        resp = await http.post(
            f"/api/sims/{sim_id}/step-timeline",
            content=ACCEPTED[name],
            headers={"Content-Type": "application/json"},
        )
        assert resp.status_code == 204, resp.text
        listed = await http.get(f"/api/runs/{run['id']}/step-timelines")
        assert listed.status_code == 200
        [timeline] = listed.json()
        sent = json.loads(ACCEPTED[name])
        if "NaN" not in ACCEPTED[name] and "Infinity" not in ACCEPTED[name]:
            assert (timeline["simulated"], timeline["compare"]) == (sent["simulated"], sent.get("compare"))
        perfetto = await http.get(f"/api/runs/{run['id']}/perfetto")
        assert perfetto.status_code == 200
        json.loads(perfetto.text, parse_constant=_refuse)  # strict JSON: no NaN or Infinity
        accuracy = await http.get("/api/accuracy")
        assert accuracy.status_code == 200, accuracy.text
        [row] = accuracy.json()
        assert row["step_wall_error_pct"] is None or math.isfinite(row["step_wall_error_pct"])
    # The UI's step pane draws it (or what of it can be drawn), at any width.
    model = SimStepTimeline.model_validate(timeline)
    for width in (40, 120):
        assert plain(step_lines([model], ["SM7_QV100"], width))
    # `cascade compare` against measured steps takes it as the simulated side.
    measured = CorrectedTimeline(
        steps=[
            MeasuredStep(
                index=0,
                name="ProfilerStep#0",
                cpu_start_ns=0,
                cpu_wall_ns=1000,
                kernels=[MeasuredKernel(name="k", start_ns=10, duration_ns=800, stream=7)],
            )
        ]
    )
    json.dumps(compare(measured, sent["simulated"]), allow_nan=False)


@pytest.mark.parametrize("name", REFUSED)
async def test_a_step_timeline_without_the_specs_shape_is_a_422(core, name):
    body, words = REFUSED[name]
    async with core.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        sim_id = run["sims"][0]["id"]
        resp = await http.post(f"/api/sims/{sim_id}/step-timeline", json=body)
        assert resp.status_code == 422, resp.text
        [error] = resp.json()["detail"]
        assert words in error["msg"] and error["msg"].count("\n") == 0
        assert (await http.get(f"/api/runs/{run['id']}/step-timelines")).json() == []


async def test_a_step_timeline_is_bounded_by_the_body_limit(make_server):
    server = await make_server(max_json_bytes=100_000)
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        sim_id = run["sims"][0]["id"]
        big = {"simulated": simulated(*(step(i) for i in range(2000)))}
        resp = await http.post(f"/api/sims/{sim_id}/step-timeline", json=big)
        assert resp.status_code == 413 and "too large" in resp.json()["detail"]


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
