"""Compare the traces of one sample_set (issue 13, "Compare runs ... and the same for traces of one
`sample_set` (sm70 against sm75)"): the pure maths on made-up numbers, then the screen on a real
server with the demo traces' own metadata.json and their real recorded Accel-Sim logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from cascade_core.models import RunSummary
from cascade_server.traces.metadata import parse_metadata
from cascade_tui.screens.compare_runs import CompareTracesScreen
from cascade_tui.screens.runs_list import RunsScreen
from cascade_tui.screens.traces_list import TracesScreen
from cascade_tui.views import compare, tracecompare
from cascade_tui.views.runcompare import RunData
from tests.conftest import ready_trace

from .conftest import comparison, make_app, on_list, played_run, select, serve
from .factories import T0, kstat, run, sim, trace
from .helpers import wait_for_app, wait_for_text

DEMO = Path(__file__).resolve().parents[2] / "samples" / "accelsim-traces"
SM70, SM75 = "tinyformer-step-sm70", "tinyformer-step-sm75"


def _member(
    trace_id: str, arch: str, suggested: str, ns: dict[str, list[float]], names: list[str] | None = None
) -> tracecompare.TraceRun:
    # Every kernel of the trace finished: real numbers, not the stand-in's (see below for those).
    sims = [
        sim(
            f"{trace_id}-{cfg}",
            run_id=f"run-{trace_id}",
            gpu_config=cfg,
            state="succeeded",
            kernels_done=len(values),
            kernels_total=len(values),
        )
        for cfg, values in ns.items()
    ]
    kernels = [
        kstat(f"{trace_id}-{cfg}", i, v, name=(names or [])[i] if names else f"_Z1kv{i}")
        for cfg, values in ns.items()
        for i, v in enumerate(values)
    ]
    t = trace(id=trace_id, trace_gpu_arch=arch, suggested_sim_config=suggested, sample_set="set")
    return tracecompare.TraceRun(t, RunData(run(sims, id=f"run-{trace_id}", trace_id=trace_id), kernels))


def test_configs_side_by_side_with_the_ratio_over_the_first_trace_on_its_own_gpu():
    sm70 = _member("a-sm70", "sm_70", "SM7_QV100", {"SM7_QV100": [100.0, 100.0], "SM7_TITANV": [50.0, 50.0]})
    sm75 = _member("a-sm75", "sm_75", "SM75_RTX2060", {"SM75_RTX2060": [100.0, 500.0]})
    assert tracecompare.reference_config(sm70) == "SM7_QV100"
    assert tracecompare.baseline([sm70, sm75]) == ("a-sm70 on SM7_QV100", 200.0)
    assert tracecompare.config_rows([sm70, sm75]) == [
        ("SM7_QV100", (200.0, None), 1.0),
        ("SM7_TITANV", (100.0, None), 0.5),
        ("SM75_RTX2060", (None, 600.0), 3.0),
    ]
    diffs = tracecompare.kernel_differences([sm70, sm75])
    assert [(d.occurrence, d.values, d.spread_pct) for d in diffs] == [
        (0, (100.0, 500.0), 400.0),
        (0, (100.0, 100.0), 0.0),
    ]
    text = "\n".join(tracecompare.lines("set", [sm70, sm75]))
    assert "ratio: over a-sm70 on SM7_QV100" in text and "3.000x" in text
    assert "5.000x  +400.0%" in text  # the kernel 5 times slower on the sm75 trace


def test_a_shared_config_compares_the_traces_directly_and_kernels_match_by_name_and_order():
    # Two traces of one arch: the second launches an extra kernel first, so positions differ;
    # names (demangled) and their order still pair them up.
    names_a = ["_Z4gemmv", "_Z4gemmv", "_Z7softmaxv"]
    names_b = ["_Z4initv", "_Z4gemmv", "_Z4gemmv", "_Z7softmaxv"]
    a = _member("b-v1", "sm_70", "SM7_QV100", {"SM7_QV100": [10.0, 20.0, 30.0]}, names_a)
    b = _member("b-v2", "sm_70", "SM7_QV100", {"SM7_QV100": [5.0, 10.0, 40.0, 30.0]}, names_b)
    assert tracecompare.config_rows([a, b]) == [("SM7_QV100", (60.0, 85.0), 85.0 / 60.0)]
    diffs = {(d.name, d.occurrence): d for d in tracecompare.kernel_differences([a, b])}
    assert diffs[("gemm()", 1)].values == (20.0, 40.0) and diffs[("gemm()", 1)].spread_pct == 100.0
    assert diffs[("gemm()", 0)].spread_pct == 0.0 and ("init()", 0) not in diffs  # in one trace only
    assert list(diffs)[0] == ("gemm()", 1)  # largest first


def test_a_zero_time_is_no_measurement_in_every_spread():
    # One spread rule for runs, traces and configs (compare.spread_pct): a zero time is left
    # out, and a kernel with two real times still compares; the ratio skips the zero too.
    members = [
        _member(f"z-{n}", "sm_70", "SM7_QV100", {"SM7_QV100": [t]}) for n, t in enumerate([0.0, 10.0, 30.0])
    ]
    [diff] = tracecompare.kernel_differences(members)
    assert diff.values == (0.0, 10.0, 30.0) and diff.spread_pct == 200.0
    assert "3.000x  +200.0%" in "\n".join(tracecompare.lines("set", members))
    assert tracecompare.kernel_differences(members[:2]) == []  # one real time: nothing to compare
    assert compare.spread_pct([0.0, None, 5.0]) is None and compare.spread_pct([4.0, 6.0]) == 50.0


def test_the_newest_run_with_succeeded_sims_of_each_trace_and_the_set_members():
    def summary(run_id, trace_id, counts):
        return RunSummary(
            id=run_id, trace_id=trace_id, created_at=T0, state="active", entries=[], sim_counts=counts
        )

    runs = [
        summary("run-3", SM70, {"running": 2}),
        summary("run-2", SM70, {"succeeded": 1, "failed": 1}),
        summary("run-1", SM70, {"succeeded": 2}),
        summary("run-0", SM75, {"failed": 1}),
    ]
    assert tracecompare.newest_runs_with_successes([SM70, SM75], runs) == {SM70: "run-2"}
    traces = [
        trace(id=SM75, sample_set="s"),
        trace(id=SM70, sample_set="s"),
        trace(id="other"),
        trace(id="broken", sample_set="s", state="failed"),
    ]
    assert [t.id for t in tracecompare.set_members(traces, "s")] == [SM70, SM75]
    lonely = tracecompare.lines("s", [tracecompare.TraceRun(traces[1], None)])
    assert any("no run with succeeded sims yet" in line for line in lonely)
    assert lonely[-1] == "Two traces of the set need a run with succeeded sims to be compared."


def after_heading(text: str, headings: list[str]) -> list[str]:
    """The lines of the table under the heading line made of `headings` (up to a blank line)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split() == headings) + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


@pytest.fixture
def srv_traces():
    """The two demo traces as their own metadata.json describes them (sample_set, arch, configs)."""
    return [
        ready_trace(
            trace_id,
            **parse_metadata((DEMO / trace_id / "metadata.json").read_bytes(), trace_id).trace_fields(),
        )
        for trace_id in (SM70, SM75)
    ]


@pytest.mark.slow
async def test_c_on_a_demo_trace_compares_sm70_against_sm75(srv, app, http, tmp_path):
    runs = {}
    for trace_id, configs in ((SM70, ["SM7_QV100", "SM7_TITANV"]), (SM75, ["SM75_RTX2060"])):
        # the real Accel-Sim output of this very trace
        runs[trace_id] = await played_run(http, [(c, 1) for c in configs], trace_id)
    totals = {}
    for created in runs.values():
        for stat in (await http.get(f"/api/runs/{created['id']}/kernels")).json():
            config = next(s["gpu_config"] for s in created["sims"] if s["id"] == stat["sim_id"])
            totals[config] = totals.get(config, 0.0) + stat["sim_time_ns"]

    async with app.run_test(size=(120, 40)) as pilot:
        await on_list(pilot, RunsScreen, [r["id"] for r in runs.values()])
        await pilot.press("t")
        screen = await select(pilot, TracesScreen, SM75, [SM70, SM75])
        assert "sample set tinyformer-step (c compares its traces)" in screen.detail_text(screen.selected())
        await pilot.press("c")
        text = await comparison(pilot, CompareTracesScreen)
        assert "sample set 'tinyformer-step'" in text
        assert f"{SM70}  sm_70  {runs[SM70]['id']}  compared on SM7_QV100" in text
        assert f"{SM75}  sm_75  {runs[SM75]['id']}  compared on SM75_RTX2060" in text
        rtx = next(line for line in text.splitlines() if line.startswith("SM75_RTX2060 "))
        assert rtx.split()[-1] == f"{totals['SM75_RTX2060'] / totals['SM7_QV100']:.3f}x"
        kernel_lines = after_heading(text, ["kernel", SM70, SM75, "ratio", "spread"])
        spreads = [float(line.rsplit(" ", 1)[1].rstrip("%")) for line in kernel_lines]
        assert len(spreads) == 15 and spreads == sorted(spreads, reverse=True)  # every kernel matched

        await pilot.press("escape")
        await wait_for_app(pilot, lambda: app.screen is screen, "back on Traces")

    # At 80 columns every number and heading still shows: the kernel names give way.
    narrow = make_app(srv, tmp_path)
    async with narrow.run_test(size=(80, 24)) as pilot:
        await on_list(pilot, RunsScreen, [r["id"] for r in runs.values()])
        await pilot.press("t")
        await select(pilot, TracesScreen, SM75, [SM70, SM75])
        await pilot.press("c")
        text = await comparison(pilot, CompareTracesScreen)
        assert max(map(len, text.splitlines())) <= 77, text
        assert after_heading(text, ["config", SM70, SM75, "ratio"])
        kernel_lines = after_heading(text, ["kernel", SM70, SM75, "ratio", "spread"])
        assert [float(line.rsplit(" ", 1)[1].rstrip("%")) for line in kernel_lines] == spreads
        assert all(line.count(" µs") + line.count(" ns") + line.count(" ms") == 2 for line in kernel_lines), (
            text
        )
        await pilot.press("end")
        await wait_for_text(pilot, kernel_lines[-1].strip())  # on screen whole, not just in the text


# --- stand-in numbers: no ratio, and why --------------------------------------------------------


def test_stand_in_numbers_show_side_by_side_without_a_ratio_or_kernel_differences():
    def replayed(member: tracecompare.TraceRun) -> tracecompare.TraceRun:
        assert member.data is not None
        return tracecompare.TraceRun(
            member.trace, RunData(member.data.run.model_copy(update={"replay": True}), member.data.kernels)
        )

    sm70 = _member("a-sm70", "sm_70", "SM7_QV100", {"SM7_QV100": [100.0, 100.0]})
    sm75 = _member("a-sm75", "sm_75", "SM75_RTX2060", {"SM75_RTX2060": [100.0, 500.0]})
    for members, who in (
        ([sm70, replayed(sm75)], "a-sm75 has"),
        ([replayed(sm70), replayed(sm75)], "a-sm70, a-sm75 have"),
    ):
        text = "\n".join(tracecompare.lines("set", members, width=200))
        assert after_heading(text, ["config", "a-sm70", "a-sm75"]) == [
            "SM7_QV100     200 ns       -",
            "SM75_RTX2060       -  600 ns",
        ]  # no ratio column
        assert "ratio:" not in text and "spread" not in text and "%" not in text
        assert (
            f"No ratio and no kernel differences: {who} stand-in numbers, a recording replayed "
            "rather than a simulation of the trace, so a ratio would measure nothing."
        ) in " ".join(text.split())
    real = "\n".join(tracecompare.lines("set", [sm70, sm75], width=200))
    assert "3.000x" in real and "No ratio" not in real  # real numbers keep their ratio


@pytest.fixture
async def short_set(make_server):
    """Two traces of one sample set with 5 kernels each: the recorded 15-kernel logs played on
    them are the stand-in's numbers, as a fresh install's sims (the stand-in) would give."""
    return await serve(
        make_server,
        [
            ready_trace(trace_id, kernels=5, sample_set="short", suggested_sim_config="SM7_QV100")
            for trace_id in ("short-a", "short-b")
        ],
    )


@pytest.mark.slow
async def test_c_on_stand_in_runs_shows_the_banner_and_says_why_there_is_no_ratio(short_set, tmp_path):
    async with short_set.client() as client:
        run_ids = [
            (await played_run(client, [("SM7_QV100", 1)], trace_id))["id"]
            for trace_id in ("short-a", "short-b")
        ]
    app = make_app(short_set, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await on_list(pilot, RunsScreen, run_ids)
        await pilot.press("t")
        await on_list(pilot, TracesScreen, ["short-a", "short-b"])
        await pilot.press("c")
        await comparison(pilot, CompareTracesScreen)
        await wait_for_text(pilot, "⚠ Stand-in numbers")  # the run screen's banner, on top
        text = app.screen.text
        assert after_heading(text, ["config", "short-a", "short-b"])  # no ratio column
        assert "spread" not in text and "x\n" not in text + "\n"
        assert "No ratio and no kernel differences: short-a, short-b have stand-in numbers" in " ".join(
            text.split()
        )
