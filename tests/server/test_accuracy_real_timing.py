"""Real timing that is not a sane number is unknown timing, never a 500: one trace's
`real_timing.json` with a 400-digit integer, Infinity, NaN, a negative or a bool must not break
`GET /api/accuracy` for every trace, nor that trace's `/comparison` and `/results`. And accuracy's
`sims` counts replicas: a replica split into shards counts once."""

from __future__ import annotations

import json
import math

import pytest

from cascade_core.accuracy import accuracy, pairs_of
from cascade_core.models import ComparisonRow
from cascade_core.trace_layout import MAX_REAL_DURATION_NS, load_real_timing, parse_real_timing
from tests.conftest import ready_trace
from tests.helpers import post_run
from tests.server.test_shard_api import simulate
from tests.server.test_shard_plan import DEMO

# Each a JSON literal of a duration that is not a kernel's real time.
BAD_DURATIONS = [
    "1" + "0" * 400,  # an integer no float holds
    "-" + "1" + "0" * 400,
    "1e400",  # json reads it as inf
    "Infinity",
    "-Infinity",
    "NaN",
    "-5",
    "true",
    "false",
    '"1500"',
    "null",
    "[1]",
    str(int(MAX_REAL_DURATION_NS) * 10),
]


def doc_with(duration: str) -> str:
    return (
        '{"kernels": [{"kernel_id": 1, "kernel_name": "a", "duration_ns": 1500},'
        f' {{"kernel_id": 2, "kernel_name": "b", "duration_ns": {duration}}}]}}'
    )


@pytest.mark.parametrize("duration", BAD_DURATIONS)
def test_a_duration_that_is_not_a_sane_number_is_unknown(tmp_path, duration):
    assert parse_real_timing(json.loads(doc_with(duration))) == [("a", 1500.0), ("b", None)]
    (tmp_path / "real_timing.json").write_text(doc_with(duration))
    assert load_real_timing(tmp_path, {}) == [("a", 1500.0), ("b", None)]


@pytest.mark.parametrize("kernel_id", ["1" + "0" * 400, "NaN", "Infinity", "true", '"x"'])
def test_a_kernel_id_that_is_not_a_number_is_its_position(kernel_id):
    doc = json.loads(
        f'[{{"kernel_id": {kernel_id}, "duration_ns": 3}}, {{"kernel_id": 5, "duration_ns": 4}}]'
    )
    assert [d for _, d in parse_real_timing(doc)] == ([4.0, 3.0] if kernel_id.startswith("1") else [3.0, 4.0])


@pytest.mark.parametrize("text", ["[" * 100_000, "1" * 5000, "{"])
def test_an_unreadable_file_is_no_real_timing(tmp_path, text):
    (tmp_path / "real_timing.json").write_text(text)
    assert load_real_timing(tmp_path, {}) is None


@pytest.mark.parametrize("real", [math.inf, -math.inf, math.nan, 0.0, -1.0, None])
def test_pairs_leave_out_real_times_that_are_not_finite_and_positive(real):
    rows = [
        ComparisonRow(kernel_index=0, kernel_name="a", real_ns=100.0, sim_ns={"v": 110.0}),
        ComparisonRow(kernel_index=1, kernel_name="b", real_ns=200.0, sim_ns={"v": 180.0}),
        ComparisonRow(kernel_index=2, kernel_name="c", real_ns=real, sim_ns={"v": 50.0}),
        ComparisonRow(kernel_index=3, kernel_name="d", real_ns=300.0, sim_ns={"v": math.inf}),
    ]
    stats = accuracy(pairs_of(rows, "v"))
    assert stats.kernels == 2
    assert stats.mape_pct == pytest.approx(10.0) and stats.pearson_r is not None
    assert all(math.isfinite(v) for v in (stats.mape_pct, stats.mean_error_pct, stats.pearson_r))


@pytest.fixture
async def two_traces(make_server, accelsim_dir):
    """Two traces with real timing and the instruction counts shards are planned from."""
    server = await make_server(accelsim_dir=accelsim_dir)
    for trace_id in ("good", "bad"):
        trace = ready_trace(trace_id, has_real_timing=True, metadata=None)
        for kernel, insts in zip(trace.kernels, DEMO):
            kernel.instructions = insts
        await server.store.traces.put_trace(trace)
        trace_dir = server.settings.traces_dir / trace_id
        (trace_dir / "traces").mkdir(parents=True)
        (trace_dir / "traces" / "kernelslist.g").write_text(
            "".join(f"kernel-{n}.traceg\n" for n in range(1, 16))
        )
        real = [{"kernel_id": n, "duration_ns": 1000.0 * (n + 1)} for n in range(15)]
        (trace_dir / "real_timing.json").write_text(json.dumps(real))
    return server


@pytest.mark.parametrize("duration", ["1" + "0" * 400, "Infinity", "NaN", "-3", "true"])
async def test_one_traces_bad_real_timing_leaves_every_endpoint_answering(two_traces, duration):
    bad = two_traces.settings.traces_dir / "bad" / "real_timing.json"
    async with two_traces.client() as http:
        runs = {}
        for trace_id in ("good", "bad"):
            resp = await http.post(
                "/api/runs", json={"trace_id": trace_id, "entries": [{"gpu_config": "SM7_QV100", "count": 1}]}
            )
            assert resp.status_code == 201, resp.text
            runs[trace_id] = resp.json()
            await simulate(http, runs[trace_id]["sims"][0])
        # kernel 3's duration in the bad trace is not a number: only that row has no real time
        text = bad.read_text().replace('"duration_ns": 4000.0', f'"duration_ns": {duration}')
        bad.write_text(text)
        resp = await http.get("/api/accuracy")
        assert resp.status_code == 200, resp.text
        rows = {r["trace_id"]: r for r in resp.json()}
        assert rows["good"]["kernels"] == 15 and rows["bad"]["kernels"] == 14
        assert all(math.isfinite(rows["bad"][k]) for k in ("mape_pct", "mean_error_pct", "pearson_r"))
        comparison = await http.get(f"/api/runs/{runs['bad']['id']}/comparison")
        assert comparison.status_code == 200, comparison.text
        assert [r["real_ns"] for r in comparison.json()["rows"]][2:5] == [3000.0, None, 5000.0]
        assert (await http.get(f"/api/runs/{runs['bad']['id']}/results")).status_code == 200


@pytest.mark.slow
async def test_accuracy_counts_a_sharded_replica_once(two_traces):
    async with two_traces.client() as http:
        clocked = {
            "gpu_config": "SM7_QV100",
            "count": 3,
            "options": {"-gpgpu_clock_domains": "500:500:500:850"},
        }
        resp = await post_run(http, [{"gpu_config": "SM7_QV100", "count": 2, "shards": 4}, clocked], "good")
        assert resp.status_code == 201, resp.text
        run = resp.json()
        assert len(run["sims"]) == 2 * 4 + 3
        for sim in run["sims"]:
            await simulate(http, sim)
        rows = (await http.get("/api/accuracy")).json()
    assert {r["label"]: r["sims"] for r in rows} == {
        "SM7_QV100": 2,
        "SM7_QV100[gpgpu_clock_domains=500:500:500:850]": 3,
    }
