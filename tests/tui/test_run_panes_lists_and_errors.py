"""The run's panes (details, files, log, kernels, steps), list filters and error boxes at 80x24 and
160x45, each played with Pilot
against a real server (real port, real SQLite, the real event stream)."""

from __future__ import annotations

import re

import pytest
from textual.widgets import DataTable

from cascade_tui.screens.modals import MessageScreen, help_text, screen_title
from cascade_tui.screens.new_run import NewRunScreen
from cascade_tui.screens.polled_table import FilterInput
from cascade_tui.screens.run import RunScreen
from cascade_tui.screens.runs_list import RunsScreen
from cascade_tui.screens.traces_list import TracesScreen
from cascade_tui.widgets.sim_table import SimTable

from .conftest import (
    broken_upload,
    comparison,
    create_run,
    make_app,
    on_list,
    open_run_screen,
    play,
    played_run,
    sample_run,
    select,
    tinyformer,
)
from .helpers import Simulator, record_notifications, recorded_log, screen_text, wait_for_app, wait_for_text

LONG_ERROR = (
    "accel-sim.out killed by SIGKILL (out of memory: the node's cgroup limit of 4 GiB "
    "was reached while loading the trace)"
)


@pytest.fixture
def srv_traces():
    return [tinyformer(), broken_upload("metadata.json says status: failed")]


async def fail(client, sim_id: str) -> None:
    sim = Simulator(client, sim_id)
    await sim.beat("running")
    await sim.log(["GPGPU-Sim: loading the trace", "last words of the simulator"])
    await sim.beat("failed", exit_code=137, error=LONG_ERROR)


@pytest.mark.slow
async def test_at_80_columns_enter_on_a_failed_sim_shows_its_error_exit_code_and_log_whole(app, http):
    run = await create_run(http, [("SM7_QV100", 1), ("SM7_TITANV", 1)])
    by_config = {s["gpu_config"]: s["id"] for s in run["sims"]}
    await play(http, by_config["SM7_QV100"], recorded_log("SM7_QV100")[:200])
    await fail(http, by_config["SM7_TITANV"])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_run_screen(pilot, run["id"])
        # The header keeps the count of every state at 80 columns.
        await wait_for_app(
            pilot,
            lambda: any(
                "partial" in line and "1 succeeded" in line and "1 failed" in line
                for line in screen_text(app).splitlines()
            ),
            "the header with both counts",
        )
        assert LONG_ERROR not in screen_text(app)  # the row cuts it

        screen = app.screen
        assert isinstance(screen, RunScreen)
        table = screen.query_one(SimTable)
        # The table redraws on its own timer: the header can show the counts before its rows.
        await wait_for_app(pilot, lambda: by_config["SM7_TITANV"] in table.order, "the failed sim's row")
        table.move_cursor_to(table.order.index(by_config["SM7_TITANV"]))
        await pilot.press("enter")
        await wait_for_app(pilot, lambda: isinstance(app.screen, MessageScreen), "the sim details")
        text = await wait_for_text(pilot, "exit code: 137")
        assert f"error: {LONG_ERROR}" in app.screen.body
        assert "reached while loading the trace)" in text, text  # whole, wrapped in the dialog
        assert "last words of the simulator" in text
        await pilot.press("escape")
        await wait_for_app(pilot, lambda: app.screen is screen, "back on the run screen")
        # `i` does the same from any pane.
        await pilot.press("i")
        await wait_for_app(pilot, lambda: isinstance(app.screen, MessageScreen), "the sim details by i")


async def test_the_files_pane_lists_files_a_sim_uploads_while_it_is_open(app, http, run):
    sim = Simulator(http, run["sims"][0]["id"])
    await sim.beat("running")
    async with app.run_test(size=(80, 24)) as pilot:
        await open_run_screen(pilot, run["id"])
        await pilot.press("f")
        await wait_for_text(pilot, "(this sim has uploaded no files yet)")
        await sim.put_file("kernel-stats.csv", b"kernel,cycles\n1,2\n")
        await sim.beat("succeeded", exit_code=0)
        text = await wait_for_text(pilot, "kernel-stats.csv")
        assert "uploaded no files" not in text


@pytest.mark.slow
async def test_help_keeps_a_space_before_each_id_and_has_a_human_title(app, run):
    async with app.run_test(size=(120, 40)) as pilot:
        await open_run_screen(pilot, run["id"])
        body = str(help_text(app.screen))
        assert re.search(r"Kernels by trace/time/spread +run\.kernel_order", body), body
        assert screen_title(app.screen) == "Run"
        await pilot.press("escape")
        await wait_for_app(pilot, lambda: not isinstance(app.screen, RunScreen), "back on Runs")
        await pilot.press("t")
        await select(pilot, TracesScreen, "tinyformer-step-sm70")
        await pilot.press("n")
        await wait_for_app(pilot, lambda: isinstance(app.screen, NewRunScreen), "New run")
        await pilot.press("question_mark")
        await wait_for_text(pilot, "Help: New run (Esc to close")


@pytest.mark.slow
async def test_escape_on_a_list_clears_a_filter_kept_with_enter(app, run):
    async with app.run_test(size=(80, 24)) as pilot:
        await on_list(pilot, RunsScreen, [])
        await wait_for_text(pilot, run["id"])
        runs = app.screen
        await pilot.press("slash", *"nothing-matches", "enter")
        await wait_for_app(pilot, lambda: run["id"] not in screen_text(app), "the run filtered out")
        assert runs.query_one(DataTable).has_focus  # Enter kept the filter, back on the list
        await pilot.press("escape")
        await wait_for_text(pilot, run["id"])
        assert app.screen is runs and runs.query_text == ""
        assert not runs.query_one(FilterInput).display


@pytest.mark.slow
async def test_the_sample_run_says_its_times_are_recorded_and_cannot_be_re_run(make_server, tmp_path):
    server = await make_server(samples=True)
    sample = await sample_run(server)
    app = make_app(server, tmp_path)
    async with app.run_test(size=(160, 45), notifications=True) as pilot:
        notes = record_notifications(app)
        await open_run_screen(pilot, sample["id"])
        text = await wait_for_text(pilot, "recorded results")
        assert "took 0s" not in text
        assert "sample run: real Accel-Sim results" in text
        assert "cancelling it changes nothing" not in text  # it has finished
        await pilot.press("R")
        await wait_for_app(pilot, lambda: any("cannot be re-run" in n for n in notes()), "the refusal")
        assert isinstance(app.screen, RunScreen)  # no question asked


@pytest.mark.slow
async def test_the_log_scrolls_sideways_without_a_scrollbar_row_above_the_footer(app, http, run):
    long_line = "stats " + "x" * 200 + " END"
    lines = [f"line {i}" for i in range(60)] + [long_line, "last line"]
    await play(http, run["sims"][0]["id"], lines)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_run_screen(pilot, run["id"])
        await wait_for_text(pilot, "last line")
        above_footer = screen_text(app).splitlines()[-2]
        assert above_footer.strip() not in ("▏", "▕", "▁"), repr(above_footer)  # no stray thumb
        assert above_footer.strip() == "last line", "the log's last line sits on the footer"
        view = app.screen.log_pane.view
        await pilot.press("tab")
        assert view.has_focus
        await pilot.press("end", *["right"] * 20)
        # Right still scrolls the long line sideways.
        await wait_for_app(
            pilot,
            lambda: view.scroll_x > 0 and "stats x" not in screen_text(app),
            "the log scrolled sideways",
        )


@pytest.mark.slow
async def test_a_state_filter_matching_no_sim_says_so_and_clears_the_log(app, http, run):
    await play(http, run["sims"][0]["id"], ["only line of a good sim"])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_run_screen(pilot, run["id"])
        await wait_for_text(pilot, "only line of a good sim")
        await pilot.press("v")  # running: none
        text = await wait_for_text(pilot, "no sim matches the filter 'running' (v: next filter)")
        assert "only line of a good sim" not in text
        assert "log: no sim matches the filter 'running'" in text
        await pilot.press("v", "v", "v")  # back to all: the sim and its log again
        await wait_for_text(pilot, "only line of a good sim")


async def test_zoomed_the_log_title_does_not_offer_the_hidden_table(app, http, run):
    await play(http, run["sims"][0]["id"], ["a line"])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_run_screen(pilot, run["id"])
        await pilot.press("tab")
        await wait_for_text(pilot, "Tab: sims")
        await pilot.press("z")
        text = await wait_for_text(pilot, "z: sims")
        assert "Tab: sims" not in text


def test_the_kernels_view_shows_no_spread_between_configs_of_stand_in_numbers():
    from cascade_core.models import ComparisonRow
    from cascade_tui.views import chart, compare

    rows = [ComparisonRow(kernel_index=0, kernel_name="_Z1av", sim_ns={"A": 10.0, "B": 30.0})]
    totals = [
        compare.ConfigTotal("A", 10.0, 10.0, 10.0, 1, 1),
        compare.ConfigTotal("B", 30.0, 30.0, 30.0, 1, 1),
    ]
    text = chart.plain(
        chart.chart_lines(
            ["A", "B"],
            rows,
            totals,
            compare.rank(totals),
            {},
            False,
            100,
            stand_in="a replayed log",
            order="spread",
        )
    )
    assert "No config is named fastest" in text
    assert "Δ +" not in text and "No Δ between configs: stand-in numbers." in text
    real = chart.plain(
        chart.chart_lines(["A", "B"], rows, totals, compare.rank(totals), {}, False, 100, order="spread")
    )
    assert "Δ +200.0%" in real


@pytest.mark.slow
async def test_the_step_timeline_pane_uses_the_whole_width(app, run):
    async with app.run_test(size=(160, 45)) as pilot:
        await open_run_screen(pilot, run["id"])
        await pilot.press("T")
        await wait_for_text(pilot, "This trace has no step timeline")
        chart = app.screen.steps_pane.chart
        widest = max(sum(len(text) for text, _ in line) for line in chart.lines)
        assert widest > 120, chart.lines  # wrapped to the pane, not to 60 columns


@pytest.mark.slow
async def test_at_80_columns_a_ready_trace_keeps_its_note_whole(app, http):
    async with app.run_test(size=(80, 24)) as pilot:
        await on_list(pilot, RunsScreen, [])
        await pilot.press("t")
        text = await wait_for_text(pilot, "tinyformer-step-sm70")
        row = next(line for line in text.splitlines() if line.startswith(" tinyformer-step-sm70"))
        assert row.rstrip().endswith("n: run on SM7_QV100"), row


def test_text_tables_shorten_the_name_column_first_and_never_a_value():
    from cascade_tui.views.texttable import table

    rows = [["layernorm_kernel<128> #2", "6.26 µs", "7.19 µs", "1.148x"]]
    heads = ["kernel", "tinyformer-step-sm70", "tinyformer-step-sm75", "ratio"]
    fitted = table(heads, rows, 70)
    assert max(map(len, fitted)) <= 70
    assert fitted[0].split() == heads  # every column headed, ids whole
    assert fitted[1].startswith("layernorm_k") and "…" in fitted[1]
    assert fitted[1].split()[-4:] == ["µs", "7.19", "µs", "1.148x"]
    # Too narrow even with the name at its least: nothing is cut, the screen scrolls sideways.
    wide = table(heads, rows, 40)
    assert max(map(len, wide)) > 40 and wide[0].split() == heads and "1.148x" in wide[1]


@pytest.mark.slow
async def test_a_comparison_wider_than_the_terminal_scrolls_sideways(app, http):
    from cascade_tui.screens.compare_runs import CompareRunsScreen

    ids = [(await played_run(http, [("SM7_QV100", 1)]))["id"] for _ in range(2)]
    async with app.run_test(size=(50, 24)) as pilot:
        await on_list(pilot, RunsScreen, [])
        await wait_for_text(pilot, ids[0][-6:])
        app.push_screen(CompareRunsScreen(ids, app.screen.services))
        await comparison(pilot, CompareRunsScreen, "ratio")
        scroll = app.screen.query_one("#compare-scroll")
        assert max(map(len, app.screen.text.splitlines())) > 47  # ids whole: wider than 50
        await pilot.press(*["right"] * 20)
        await wait_for_app(pilot, lambda: scroll.scroll_x > 0, "the table scrolled sideways")
