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
from cascade_core.real_timing import MAX_REAL_DURATION_NS, parse_real_timing
from cascade_server.traces.real_timing_file import read_file
from tests.conftest import ready_trace
from tests.helpers import post_run, store_real_timing
from tests.server.test_shard_api import RECORDED, simulate
from tests.server.test_shard_plan import DEMO

# The recorded log's kernel names, in order: real timing that names them is this trace's.
NAMES = [line.split("=", 1)[1].strip() for line in RECORDED if line.startswith("kernel_name = ")]

# Each a JSON literal of a duration that is not a kernel's real time.
BAD_DURATIONS = [
    "1" + "0" * 400,  # an integer no float holds
    "-" + "1" + "0" * 400,
    "1e400",  # json reads it as inf
    "0",
    "1e-300",  # a 310-digit error against any simulated time
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
    expected = [(1, "a", 1500.0), (2, "b", None)]
    assert parse_real_timing(json.loads(doc_with(duration))) == expected
    (tmp_path / "real_timing.json").write_text(doc_with(duration))
    read = read_file(tmp_path / "real_timing.json", {})
    assert read.rows == expected and read.error is None


@pytest.mark.parametrize("kernel_id", ["1" + "0" * 400, "NaN", "Infinity", "true", '"x"'])
def test_a_kernel_id_that_is_not_a_number_is_its_position(kernel_id):
    doc = json.loads(
        f'[{{"kernel_id": {kernel_id}, "duration_ns": 3}}, {{"kernel_id": 5, "duration_ns": 4}}]'
    )
    # (an integer no float holds is no kernel id either: its position, 0, sorts first)
    assert [row.duration_ns for row in parse_real_timing(doc)] == [3.0, 4.0]


@pytest.mark.parametrize(
    "text, why",
    [
        ("[" * 100_000, "is not JSON"),
        ("1" * 5000, "is not JSON"),
        ("{", "is not JSON"),
        ("not json at all", "is not JSON: Expecting value"),
        ('{"kernels": 5}', "holds no list of kernels"),
        ("[]", "has no kernel with a known duration"),
        ('[{"kernel_id": 1, "duration_ns": null}]', "has no kernel with a known duration"),
    ],
)
def test_a_file_that_gives_no_real_timing_says_why(tmp_path, text, why):
    """Issue 32: a real_timing.json that is not JSON kept `has_real_timing: true`."""
    (tmp_path / "real_timing.json").write_text(text)
    read = read_file(tmp_path / "real_timing.json", {})
    assert read.rows == [] and why in (read.error or "") and "\n" not in (read.error or "")
    assert read.trace_fields() == {"has_real_timing": False, "real_timing_error": read.error}


def test_a_file_of_another_workloads_kernels_is_refused_and_unnamed_rows_take_the_traces_names(tmp_path):
    trace = {1: "_Z4gemmIfEvPT_", 2: "_Z4geluv"}
    path = tmp_path / "real_timing.json"
    path.write_text(json.dumps([{"kernel_id": 1, "kernel_name": "resnet_conv", "duration_ns": 5}]))
    read = read_file(path, trace)
    assert read.rows == [] and "names none of the trace's kernels" in (read.error or "")
    # A demangled name is the same kernel; a row without a name times the trace's kernel of its id.
    path.write_text(
        json.dumps(
            [
                {"kernel_id": 1, "kernel_name": "void gemm<float>(float*)", "duration_ns": 5},
                {"id": 2, "duration_ns": 7},
            ]
        )
    )
    assert read_file(path, trace).rows == [(1, "void gemm<float>(float*)", 5.0), (2, "_Z4geluv", 7.0)]


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


def test_every_figure_is_bounded():
    """Issue 32: real times of 1e-300 ns made 310-digit MAPEs. Those are unknown now (below
    1 ns), and a kernel's error counts at most ±1,000,000% whatever the two times."""
    rows = [
        ComparisonRow(kernel_index=0, kernel_name="a", real_ns=1.0, sim_ns={"v": 86_400e9}),
        ComparisonRow(kernel_index=1, kernel_name="b", real_ns=86_400e9, sim_ns={"v": 0.0}),
    ]
    stats = accuracy(pairs_of(rows, "v"))
    assert stats.mape_pct == pytest.approx((1e6 + 100) / 2)
    assert [k.error_pct for k in stats.worst] == [1e6, -100.0]


def test_a_row_whose_real_kernel_is_another_is_never_paired():
    rows = [
        ComparisonRow(kernel_index=0, kernel_name="a", real_ns=100.0, sim_ns={"v": 110.0}),
        ComparisonRow(kernel_index=1, kernel_name="x", real_ns=1.0, sim_ns={"v": 900.0}, sim_kernel_name="b"),
    ]
    stats = accuracy(pairs_of(rows, "v"))
    assert stats.kernels == 1 and stats.mape_pct == pytest.approx(10.0)


def real_doc(names=NAMES, duration="1000.0 * (n + 1)"):
    return [
        {"kernel_id": n + 1, "kernel_name": name, "duration_ns": eval(duration, {"n": n})}
        for n, name in enumerate(names)
    ]


@pytest.fixture
async def two_traces(make_server, accelsim_dir):
    """Two traces of the recorded log's kernels with real timing, and the instruction counts
    shards are planned from."""
    server = await make_server(accelsim_dir=accelsim_dir)
    for trace_id in ("good", "bad"):
        trace = ready_trace(trace_id, metadata=None)
        for kernel, insts, name in zip(trace.kernels, DEMO, NAMES):
            kernel.instructions, kernel.name = insts, name
        await store_real_timing(server.store, trace, real_doc())
        trace_dir = server.settings.traces_dir / trace_id
        (trace_dir / "traces").mkdir(parents=True)
        (trace_dir / "traces" / "kernelslist.g").write_text(
            "".join(f"kernel-{n}.traceg\n" for n in range(1, 16))
        )
    return server


async def run_each(http, trace_ids=("good", "bad")) -> dict:
    runs = {}
    for trace_id in trace_ids:
        resp = await http.post(
            "/api/runs", json={"trace_id": trace_id, "entries": [{"gpu_config": "SM7_QV100", "count": 1}]}
        )
        assert resp.status_code == 201, resp.text
        runs[trace_id] = resp.json()
        await simulate(http, runs[trace_id]["sims"][0])
    return runs


@pytest.mark.parametrize("duration", ["1" + "0" * 400, "Infinity", "NaN", "-3", "true", "1e-300"])
async def test_one_traces_bad_real_timing_leaves_every_endpoint_answering(two_traces, duration):
    async with two_traces.client() as http:
        runs = await run_each(http)
        # kernel 3's duration in the bad trace is not a number: only that row has no real time
        bad = await two_traces.store.traces.get_trace("bad")
        text = json.dumps(real_doc()).replace('"duration_ns": 4000.0', f'"duration_ns": {duration}')
        assert (await store_real_timing(two_traces.store, bad, json.loads(text))).has_real_timing
        resp = await http.get("/api/accuracy")
        assert resp.status_code == 200, resp.text
        rows = {r["trace_id"]: r for r in resp.json()}
        assert rows["good"]["kernels"] == 15 and rows["bad"]["kernels"] == 14
        assert all(math.isfinite(rows["bad"][k]) for k in ("mape_pct", "mean_error_pct", "pearson_r"))
        comparison = await http.get(f"/api/runs/{runs['bad']['id']}/comparison")
        assert comparison.status_code == 200, comparison.text
        assert [r["real_ns"] for r in comparison.json()["rows"]][2:5] == [3000.0, None, 5000.0]
        assert (await http.get(f"/api/runs/{runs['bad']['id']}/results")).status_code == 200


async def test_kernels_the_real_timing_names_otherwise_are_left_out_and_counted(two_traces):
    """Issue 32: real timing whose kernels are not the ones the sims ran was paired by position
    (868% MAPE, no warning). Now only rows of the same kernel pair; the others are counted."""
    async with two_traces.client() as http:
        runs = await run_each(http, ("bad",))
        bad = await two_traces.store.traces.get_trace("bad")
        names = [*NAMES[:3], *NAMES[3:][::-1]]  # positions 3.. time other kernels (7 the same)
        await store_real_timing(two_traces.store, bad, real_doc(names))
        [row] = (await http.get("/api/accuracy")).json()
        same = sum(1 for a, b in zip(names, NAMES) if a == b)
        assert row["kernels"] == same and row["kernels_unmatched"] == 15 - same
        rows = (await http.get(f"/api/runs/{runs['bad']['id']}/comparison")).json()["rows"]
        assert [r.get("sim_kernel_name") for r in rows] == [
            None if a == b else b for a, b in zip(names, NAMES)
        ]
        # A file of another workload altogether is no real timing of this trace.
        stored = await store_real_timing(
            two_traces.store, bad, real_doc([f"_Z5otherv{n}" for n in range(15)])
        )
        assert not stored.has_real_timing and "names none of the trace's kernels" in stored.real_timing_error
        trace = (await http.get("/api/traces/bad")).json()
        assert trace["has_real_timing"] is False and "another workload" in trace["real_timing_error"]
        assert (await http.get("/api/accuracy")).json() == []
        comparison = (await http.get(f"/api/runs/{runs['bad']['id']}/comparison")).json()
        assert comparison["has_real_timing"] is False and all(
            r["real_ns"] is None for r in comparison["rows"]
        )


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


def test_the_comparison_json_is_the_models_json_without_the_models():
    """`/comparison` writes its rows without a model per row (300,000 of them took seconds):
    the same JSON as the model, its additions (`failed`, `sim_kernel_name`) left out when empty."""
    from cascade_server.services.run_comparison import comparison, comparison_json
    from tests.tui.factories import kstat, run, sim

    the_run = run([sim("sim-a", gpu_config="A"), sim("sim-b", gpu_config="B")])
    kernels = [
        kstat("sim-a", 0, 100.0),
        kstat("sim-a", 1, None, name="_Z6reducev", failed="deadlock"),
        kstat("sim-b", 0, 110.0),
        kstat("sim-b", 1, 220.0, name="_Z6reducev"),
        kstat("sim-b", 2, 5.0, name="_Z5ünïv"),
    ]
    name = kernels[0].kernel_name
    for real in ([], [(name, 90.0), ("_Z5otherv", 7.0), (None, 3.0), ("_Z4tailv", 1.0)]):
        expected = json.loads(comparison(the_run, kernels, real).model_dump_json())
        assert json.loads(comparison_json(the_run, kernels, real)) == expected
    assert [r.get("sim_kernel_name") for r in expected["rows"]] == [None, "_Z6reducev", "_Z5ünïv", None]
    assert expected["rows"][1]["failed"] == ["A"] and "failed" not in expected["rows"][0]
