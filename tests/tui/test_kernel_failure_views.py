"""Issue 30: every view says which kernels are missing when the simulator failed on some. A sim
succeeded with kernel 2 (0-based 1) failed on config A; config B simulated every kernel."""

from __future__ import annotations

import csv
import io
import json

from cascade_core.comparison import kernel_rows
from cascade_server.services.run_comparison import perfetto_trace
from cascade_tui.views import chart, compare
from cascade_tui.views.output import render
from cascade_tui.views.result_views import (
    KERNEL_COLUMNS,
    TOTAL_COLUMNS,
    comparison_columns,
    comparison_records,
    kernel_records,
    total_records,
)

from .factories import kstat, run, sim

REASON = "shader.cc:3812: void barrier_set_t::deallocate_barrier(unsigned int): Assertion `x' failed."
ERROR = f"1 of 3 kernels failed in the simulator: #1 ({REASON[:20]})"


def scene():
    a = sim(
        "sim-a",
        gpu_config="A",
        state="succeeded",
        kernels_done=3,
        kernels_total=3,
        kernels_failed=1,
        error=ERROR,
    )
    b = sim("sim-b", gpu_config="B", state="succeeded", kernels_done=3, kernels_total=3)
    the_run = run([a, b], state="succeeded")
    kernels = [
        kstat("sim-a", 0, 100.0),
        kstat("sim-a", 1, None, name="_Z6reducev", failed=REASON),
        kstat("sim-a", 2, 300.0),
        kstat("sim-b", 0, 110.0),
        kstat("sim-b", 1, 220.0, name="_Z6reducev"),
        kstat("sim-b", 2, 330.0),
    ]
    return the_run, kernels


def test_the_comparison_leaves_the_failed_kernel_out_and_names_its_configs():
    the_run, kernels = scene()
    rows = kernel_rows(["A", "B"], {"sim-a": "A", "sim-b": "B"}, kernels)
    assert rows[1].sim_ns == {"A": None, "B": 220.0} and rows[1].failed == ["A"]
    assert rows[0].failed == [] and "failed" not in rows[0].model_dump()  # absent when none


def test_totals_say_they_are_not_the_whole_trace():
    the_run, kernels = scene()
    totals = compare.config_totals(["A", "B"], {s.id: s for s in the_run.sims}, kernels)
    assert totals[0].coverage_note() == "2 of 3 kernels, 1 failed in the simulator"
    assert totals[1].coverage_note() is None
    records = total_records(the_run, kernels)
    assert (
        records[0]["total_ns"] == 400.0 and records[0]["note"] == "2 of 3 kernels, 1 failed in the simulator"
    )
    assert "1 failed in the simulator" in render("table", TOTAL_COLUMNS, records)


def test_cascade_results_kernels_give_the_failed_row_its_reason_in_every_format():
    the_run, kernels = scene()
    records = kernel_records(the_run, kernels)
    table = render("table", KERNEL_COLUMNS, records)
    assert "failed in the simulator" in table.splitlines()[0]
    assert REASON in table
    rows = list(csv.DictReader(io.StringIO(render("csv", KERNEL_COLUMNS, records))))
    assert [r["failed"] for r in rows] == ["", REASON, "", "", "", ""]
    assert json.loads(render("json", KERNEL_COLUMNS, records))[1]["failed"] == REASON
    # a run with no failure keeps today's table: no empty column
    clean = [r for r in records if not r["failed"]]
    assert "failed" not in render("table", KERNEL_COLUMNS, clean)


def test_the_comparison_export_names_the_configs_that_failed():
    the_run, kernels = scene()
    from cascade_server.services.run_comparison import comparison

    result = comparison(the_run, kernels, None)
    records = comparison_records(result)
    assert records[1]["failed"] == ["A"] and records[0]["failed"] == []
    rows = list(csv.DictReader(io.StringIO(render("csv", comparison_columns(result), records))))
    assert rows[1]["failed"] == "A" and rows[1]["A"] == "" and rows[1]["B"] == "220.0"


def test_the_kernels_view_shows_the_reason_and_the_partial_coverage():
    the_run, kernels = scene()
    sims = {s.id: s for s in the_run.sims}
    rows = compare.kernel_rows(["A", "B"], sims, kernels)
    totals = compare.config_totals(["A", "B"], sims, kernels)
    lines = chart.chart_lines(
        ["A", "B"],
        rows,
        totals,
        compare.rank(totals),
        {},
        False,
        100,
        failures=compare.failure_reasons(kernels, sims),
    )
    text = chart.plain(lines)
    assert "A: 2 of 3 kernels, 1 failed in the simulator; its total leaves them out." in text
    kernel_2 = text[text.index("#1 ") :]
    assert "failed in the simulator" in kernel_2.splitlines()[1]  # A's bar line says so
    only_failed = [
        r.model_copy(update={"sim_ns": {"A": None, "B": None}}) if r.kernel_index == 1 else r for r in rows
    ]
    text = chart.plain(
        chart.chart_lines(
            ["A", "B"], only_failed, totals, compare.rank(totals), {}, False, 100, failures={1: {"A": REASON}}
        )
    )
    assert f"failed in the simulator on A: {REASON[:40]}" in text


def test_perfetto_marks_the_failed_kernel_and_stays_valid_json():
    the_run, kernels = scene()
    trace = perfetto_trace(the_run, kernels)
    marks = [e for e in trace["traceEvents"] if e.get("cat") == "failed"]
    assert len(marks) == 1 and marks[0]["ph"] == "i" and marks[0]["args"]["reason"] == REASON
    assert marks[0]["ts"] == 0.1  # where the kernel would have started: after kernel 1's 100 ns
    json.loads(json.dumps(trace, allow_nan=False))


def test_each_config_gets_its_own_reason_when_they_differ():
    """A config with its own changes can fail a kernel for another reason than the stock one."""
    the_run, kernels = scene()
    kernels = [
        k.model_copy(update={"failed": "x", "sim_time_ns": None})
        if k.sim_id == "sim-b" and k.kernel_index == 1
        else k
        for k in kernels
    ]
    sims = {s.id: s for s in the_run.sims}
    reasons = compare.failure_reasons(kernels, sims)
    assert reasons == {1: {"A": REASON, "B": "x"}}
    rows = compare.kernel_rows(["A", "B"], sims, kernels)
    totals = compare.config_totals(["A", "B"], sims, kernels)
    text = chart.plain(
        chart.chart_lines(["A", "B"], rows, totals, compare.rank(totals), {}, False, 200, failures=reasons)
    )
    assert "failed in the simulator on A: " + REASON in text and "failed in the simulator on B: x" in text


def test_the_sims_table_says_how_many_kernels_failed_and_pytorch_names_keep_their_namespace():
    from cascade_tui.views.formatting import short_kernel_name
    from cascade_tui.views.simrows import sim_cells

    from .factories import T0

    the_run, _ = scene()
    cells = sim_cells(the_run.sims[0], T0)
    assert cells["progress"].text.endswith(" 1✗")
    assert not sim_cells(the_run.sims[1], T0)["progress"].text.endswith("✗")
    anonymous = "_ZN2at6native12_GLOBAL__N_125multi_tensor_apply_kernelINS1_18TensorListMetadataILi1EEEEEvT_"
    assert short_kernel_name(anonymous).startswith(
        "at::native::(anonymous namespace)::multi_tensor_apply_kernel<"
    )
