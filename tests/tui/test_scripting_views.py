"""The scripting commands' pure parts: `--config NAME[xN]`, tables, CSV / JSON, the progress line."""

from __future__ import annotations

import csv
import io
import json
import math
from datetime import UTC, datetime, timedelta

import pytest

from cascade_core.models import Comparison, ComparisonRow, SimState, SimSummary
from cascade_tui.views.compare import trace_note
from cascade_tui.views.output import Column, printable, render, render_table
from cascade_tui.views.result_views import (
    TOTAL_COLUMNS,
    comparison_columns,
    comparison_records,
    ranking_sentence,
    total_records,
)
from cascade_tui.views.run_rows import sims_text
from cascade_tui.views.script_views import (
    EntryError,
    entries_text,
    parse_entries,
    progress_line,
    run_header,
    sim_records,
)
from tests.tui import factories

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def sim(
    config: str = "SM7_QV100",
    replica: int = 0,
    state: SimState = "running",
    done: int = 0,
    total: int = 10,
    **fields,
) -> SimSummary:
    return SimSummary(
        id=f"sim-{config}-{replica}",
        run_id="run-1",
        gpu_config=config,
        replica=replica,
        state=state,
        created_at=NOW,
        kernels_done=done,
        kernels_total=total,
        **fields,
    )


def test_config_entries_take_a_count_and_add_up():
    entries = parse_entries(["SM7_QV100x2", "SM6_TITANX", "SM7_QV100", "SM75_RTX2060x64"])
    assert [(e.gpu_config, e.count) for e in entries] == [
        ("SM7_QV100", 3),
        ("SM6_TITANX", 1),
        ("SM75_RTX2060", 64),
    ]
    assert entries_text(entries) == "SM7_QV100x3 SM6_TITANX SM75_RTX2060x64"
    assert parse_entries([]) == []


@pytest.mark.parametrize("value", ["SM7_QV100x0", "SM7_QV100x65", "", "  "])
def test_bad_config_entries_say_what_is_expected(value):
    with pytest.raises(EntryError, match="--config"):
        parse_entries([value])


def test_table_aligns_columns_without_trailing_spaces():
    columns = (
        Column("name", "name"),
        Column("n", "count", right=True),
        Column("hidden", "h", in_table=False),
        Column("t", "time", lambda v: f"{v:.1f}s"),
    )
    text = render_table(
        columns,
        [
            {"name": "a", "n": 5, "hidden": 1, "t": None},
            {"name": "longer", "n": 1234, "hidden": 2, "t": 2.25},
        ],
    )
    assert text.splitlines() == [
        "name    count  time",
        "a           5  -",
        "longer   1234  2.2s",
    ]


def test_csv_and_json_carry_exact_values_and_every_column():
    columns = (Column("k", "k"), Column("x", "x", in_table=False), Column("name", "name"))
    records = [{"k": 0.1 + 0.2, "x": None, "name": 'quote " and, comma'}, {"k": 1e-300, "x": 3, "name": ""}]
    read = list(csv.DictReader(io.StringIO(render("csv", columns, records))))
    assert [float(r["k"]) for r in read] == [0.1 + 0.2, 1e-300]
    assert [r["x"] for r in read] == ["", "3"] and read[0]["name"] == 'quote " and, comma'
    assert json.loads(render("json", columns, records)) == records


def test_comparison_has_a_column_per_config_and_demangled_names():
    comparison = Comparison(
        has_real_timing=True,
        configs=["A", "B"],
        rows=[
            ComparisonRow(
                kernel_index=0,
                kernel_name="_Z11gelu_kernelP6float4i",
                real_ns=100.0,
                sim_ns={"A": 90.0, "B": None},
            ),
        ],
    )
    assert [c.key for c in comparison_columns(comparison)] == [
        "kernel_index",
        "kernel",
        "kernel_name",
        "real_ns",
        "A",
        "B",
        "failed",
    ]
    assert comparison_records(comparison) == [
        {
            "kernel_index": 0,
            "kernel": "gelu_kernel(float4*, int)",
            "kernel_name": "_Z11gelu_kernelP6float4i",
            "real_ns": 100.0,
            "A": 90.0,
            "B": None,
            "failed": [],
        }
    ]


def test_sims_text_counts_succeeded_of_all_then_the_rest_in_state_order():
    assert sims_text({"failed": 1, "succeeded": 2, "pending": 3}) == "2/6 succeeded, 3 pending, 1 failed"
    assert sims_text({}) == "0/0 succeeded"


def test_sim_records_say_the_error_or_the_last_kernel():
    started = NOW - timedelta(seconds=75)
    rows = sim_records(
        [
            sim(
                state="failed",
                error="deadlock detected",
                started_at=started,
                finished_at=started + timedelta(seconds=5),
            ),
            sim(replica=1, state="succeeded", current_kernel="_Z11gelu_kernelP6float4i"),
            sim(replica=2, state="running", current_kernel="_Z11gelu_kernelP6float4i", started_at=started),
        ],
        NOW,
    )
    assert [r["detail"] for r in rows] == ["deadlock detected", "last: gelu_kernel", "gelu_kernel"]
    assert [r["elapsed"] for r in rows] == ["5s", None, "1m15s"]


def test_progress_line_counts_succeeded_work_and_marks_lost_sims_apart():
    sims = [sim(state="failed", done=2), sim(replica=1, done=5), sim(replica=2, state="running", done=40)]
    line = progress_line("run-1", sims, columns=80)
    # failed: lost (x, 10 of 30); running: 5 of 10; the stand-in's 40 of 10 counts as 10: 15 of 30 good
    assert line == f"run-1 ▶ active [{'#' * 10}{'x' * 7}{'.' * 4}]  50%  0/3 succeeded, 2 running, 1 failed"
    done = progress_line("run-1", [sim(state="succeeded", done=10)], columns=80)
    assert done.startswith("run-1 ✔ succeeded [########################] 100%  1/1 succeeded")


@pytest.mark.parametrize("state", ["cancelled", "failed"])
def test_a_run_that_did_not_succeed_never_reads_100_percent(state):
    sims = [sim(state="succeeded", done=10, replica=i) for i in range(199)] + [
        sim(replica=199, state=state, done=10)
    ]
    line = progress_line("run-1", sims)
    assert " 99%" in line and "100%" not in line and line.count("x") >= 1


@pytest.mark.parametrize("columns", [40, 60, 80, 120])
def test_progress_line_fits_the_terminal_with_a_column_to_spare(columns):
    sims = [
        sim(config=f"SM7_QV100_{i}", state=state, done=3)
        for i, state in enumerate(
            ["pending", "launching", "running", "lost", "succeeded", "failed", "cancelled"]
        )
    ]
    line = progress_line("run-9f56e171af08", sims, columns=columns)
    assert len(line) <= columns - 1, line
    assert line.startswith("run-9f56e171af08 ")


def test_json_carries_nan_and_infinity_as_the_api_does():
    text = render("json", (Column("v", "v"),), [{"v": math.nan}, {"v": -math.inf}, {"v": [math.inf]}])
    assert json.loads(text) == [{"v": "NaN"}, {"v": "-Infinity"}, {"v": ["Infinity"]}]
    assert "NaN," not in text.replace('"NaN"', "")  # strict JSON: no bare NaN literal


def test_tables_and_text_spell_out_control_characters_but_json_and_csv_stay_exact():
    hostile = "evil\x1b[2J\x1b]0;pwned\x07\nnext\tline"
    columns = (Column("id", "id"), Column("model", "model"))
    table = render_table(columns, [{"id": hostile, "model": "ok"}])
    assert "\x1b" not in table and "\x07" not in table and "\t" not in table
    assert len(table.splitlines()) == 2  # header and one row: no injected line
    assert r"evil\x1b[2J\x1b]0;pwned\x07\nnext\tline" in table
    assert json.loads(render("json", columns, [{"id": hostile}]))[0]["id"] == hostile
    assert next(csv.DictReader(io.StringIO(render("csv", columns, [{"id": hostile}]))))["id"] == hostile
    assert printable("plain é 中 text") == "plain é 中 text"
    failed = sim(state="failed", error="boom\x1b[31m\r\nfake prompt$ ")
    assert "\x1b" not in progress_line("run-\x1b[1m", [failed]) and "\\x1b[1m" in progress_line(
        "run-\x1b[1m", [failed]
    )
    assert sim_records([failed], NOW)[0]["detail"] == failed.error  # records stay raw: the table escapes


def _two_config_run(replay: bool):
    sims = [
        factories.sim("sim-a", gpu_config="SM7_QV100", state="succeeded", kernels_done=2, kernels_total=2),
        factories.sim("sim-b", gpu_config="SM7_TITANV", state="succeeded", kernels_done=2, kernels_total=2),
    ]
    run = factories.run(sims, state="succeeded", replay=replay)
    kernels = [factories.kstat("sim-a", i, 100.0) for i in range(2)] + [
        factories.kstat("sim-b", i, 300.0) for i in range(2)
    ]
    return run, kernels


def test_a_stand_in_run_keeps_its_totals_but_names_no_fastest_config_and_no_multiples():
    run, kernels = _two_config_run(replay=True)
    records = total_records(run, kernels)
    assert [(r["config"], r["total_ns"], r["vs_fastest"]) for r in records] == [
        ("SM7_QV100", 200.0, None),
        ("SM7_TITANV", 600.0, None),
    ]
    sentence = ranking_sentence(run, kernels)
    assert "is fastest" not in sentence and "tie for fastest" not in sentence and "3.00x" not in sentence
    assert sentence.startswith("Stand-in numbers (the sims replayed a recorded Accel-Sim log)")
    # The same numbers from a real simulation do rank.
    real, kernels = _two_config_run(replay=False)
    assert [r["vs_fastest"] for r in total_records(real, kernels)] == [1.0, 3.0]
    assert ranking_sentence(real, kernels).startswith("SM7_QV100 is fastest.")


def test_a_run_whose_trace_was_deleted_says_so_in_the_cli_and_the_ui():
    error = "trace demo was deleted at 2026-11-30T11:00:00.000000Z; a trace uploaded since under this id is another trace"
    gone = factories.run(
        [factories.sim(state="succeeded")],
        state="succeeded",
        trace=factories.trace(state="failed", error=error),
    )
    assert run_header(gone, NOW)[1:3] == ["trace    demo  sm_86  facebook/opt-125m", f"         {error}"]
    assert trace_note(gone) == f"Trace: {error}."
    live = factories.run([factories.sim()])
    assert (
        not any(line.startswith("         ") for line in run_header(live, NOW)) and trace_note(live) is None
    )


def test_a_run_whose_sims_never_said_running_does_not_claim_none_started():
    # A sim's started_at is its first `running` heartbeat; a sim may end without one.
    ran = factories.run([factories.sim(state="succeeded")], state="succeeded")
    assert "started  not reported (the sims ended without a `running` heartbeat)" in run_header(ran, NOW)
    waiting = factories.run([factories.sim(state="pending")])
    assert "started  no sim started yet" in run_header(waiting, NOW)
    never = factories.run([factories.sim(state="cancelled")], state="cancelled")
    assert "started  no sim started" in run_header(never, NOW)


def test_a_config_with_no_succeeded_replica_has_no_total_but_a_marked_partial_one():
    """A run cancelled after 2 of 15 kernels: `total_ns` (what a script reads as the config's
    total) stays empty, as the README says; the running total is `partial_ns`, marked as the UI
    marks it, in the table, CSV and JSON alike."""
    sims = [
        factories.sim("sim-a", gpu_config="SM7_QV100", state="succeeded", kernels_done=2, kernels_total=2),
        factories.sim("sim-b", gpu_config="SM7_GV100", state="cancelled", kernels_done=2, kernels_total=15),
    ]
    run = factories.run(sims, state="cancelled")
    kernels = [factories.kstat("sim-a", i, 100.0) for i in range(2)] + [
        factories.kstat("sim-b", i, 4619.5) for i in range(2)
    ]
    records = {r["config"]: r for r in total_records(run, kernels)}
    partial = records["SM7_GV100"]
    assert (partial["total_ns"], partial["low_ns"], partial["high_ns"], partial["vs_fastest"]) == (None,) * 4
    assert partial["partial_ns"] == 9239.0 and partial["note"] == "partial: 2/15 kernels, 9.24 µs so far"
    whole = records["SM7_QV100"]
    assert (whole["total_ns"], whole["partial_ns"], whole["note"]) == (200.0, None, None)

    table = render("table", TOTAL_COLUMNS, list(records.values())).splitlines()
    assert table[0].split()[-1] == "note"
    assert table[2].split()[:6] == ["SM7_GV100", "0", "1", "-", "-", "-"]
    assert table[2].endswith("partial: 2/15 kernels, 9.24 µs so far")
    row = {
        r["config"]: r
        for r in csv.DictReader(io.StringIO(render("csv", TOTAL_COLUMNS, list(records.values()))))
    }
    assert (row["SM7_GV100"]["total_ns"], row["SM7_GV100"]["partial_ns"]) == ("", "9239.0")
    assert json.loads(render("json", TOTAL_COLUMNS, list(records.values())))[1]["total_ns"] is None
