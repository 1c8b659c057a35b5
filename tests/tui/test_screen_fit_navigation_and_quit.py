"""The screens fit 80 columns and 16 colours, keep their cursors and quit safely, each as an operator
meets it, against a real server
(real port, real SQLite, the real routes and event stream; sims played through the simulator
endpoints with recorded Accel-Sim logs)."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest
from rich.color import ColorSystem, ColorType
from rich.console import Console
from rich.segment import Segment
from rich.style import Style

from cascade_core.models import RunEntry, RunSummary
from cascade_tui.app import CascadeApp
from cascade_tui.screens.modals import HelpScreen, MessageScreen, QuitScreen
from cascade_tui.screens.run import RunScreen
from cascade_tui.screens.runs_list import RunsScreen
from cascade_tui.screens.traces_list import TracesScreen
from cascade_tui.views.columns import fit
from cascade_tui.views.quit_outcome import QuitOutcome
from cascade_tui.widgets.kernel_chart import KernelChart
from cascade_tui.widgets.log_view import LogView
from cascade_tui.widgets.sim_table import SimTable

from .conftest import (
    LONG_ERROR,
    TRACE,
    UPDATE,
    create_run,
    log_tail,
    make_app,
    on_list,
    open_run_screen,
    play,
    select,
)
from .helpers import Simulator, assert_snapshot, recorded_log, screen_text, wait_for_app, wait_for_text


def flat(app: CascadeApp) -> str:
    """The screen's words, wrapping undone."""
    return " ".join(screen_text(app).split())


def footer(app: CascadeApp) -> str:
    lines = screen_text(app).splitlines()
    return lines[-1] if lines else ""


async def footer_whole(pilot) -> None:
    """The footer ends with the app's keys, `q Quit` and `? Help`, not cut."""
    await wait_for_app(
        pilot,
        lambda: "q Quit" in footer(pilot.app) and "? Help" in footer(pilot.app),
        "q Quit and ? Help in the footer",
    )


# --- traces ---------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("size", [(80, 24), (100, 30), (160, 45)])
async def test_a_failed_traces_error_comes_first_whole_and_enter_shows_all_of_it(app, size):
    async with app.run_test(size=size) as pilot:
        await on_list(pilot, RunsScreen, [])
        await pilot.press("t")
        await select(pilot, TracesScreen, "broken-upload", ["broken-upload", TRACE])
        whole = " ".join(LONG_ERROR.split())
        # Whole, under the table, before the metadata.
        await wait_for_app(pilot, lambda: whole in flat(app), "the whole error")
        assert flat(app).index("post-processing failed") < flat(app).index("traced on")
        await pilot.press("enter")
        await wait_for_app(
            pilot,
            lambda: isinstance(app.screen, MessageScreen) and "Trace broken-upload failed" in flat(app),
            "the error shown",
        )
        assert whole in " ".join(screen_text(app).replace("█", " ").split())
        await pilot.press("escape")
        await wait_for_app(pilot, lambda: isinstance(app.screen, TracesScreen), "back on Traces")


# --- lists: Home/End, and the cursor back on the run just left --------------------------------


@pytest.mark.slow
async def test_home_and_end_move_to_the_first_and_last_row_of_both_lists(app, http):
    runs = [await create_run(http, [("SM7_QV100", 1)]) for _ in range(3)]
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await on_list(pilot, RunsScreen, [r["id"] for r in runs])
        order = list(screen.items)
        await pilot.press("end")
        await wait_for_app(pilot, lambda: screen.selected_id() == order[-1], "End: the last run")
        await pilot.press("home")
        await wait_for_app(pilot, lambda: screen.selected_id() == order[0], "Home: the first run")
        await pilot.press("t")
        traces = await on_list(pilot, TracesScreen, ["broken-upload", TRACE])
        order = list(traces.items)
        await pilot.press("end")
        await wait_for_app(pilot, lambda: traces.selected_id() == order[-1], "End: the last trace")
        await pilot.press("home")
        await wait_for_app(pilot, lambda: traces.selected_id() == order[0], "Home: the first trace")


@pytest.mark.parametrize("back", ["r", "escape"])
async def test_back_on_runs_the_cursor_is_on_the_run_just_left(app, http, back):
    runs = [await create_run(http, [("SM7_QV100", 1)]) for _ in range(3)]
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await on_list(pilot, RunsScreen, [r["id"] for r in runs])
        await pilot.press("end")  # the oldest run: not where the cursor starts
        target = list(screen.items)[-1]
        await wait_for_app(pilot, lambda: screen.selected_id() == target, "the cursor on the last run")
        await pilot.press("enter")
        await wait_for_app(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        assert app.screen.run_id == target
        await pilot.press("home")  # nothing on the list moves while the run is shown
        await pilot.press(back)
        await wait_for_app(pilot, lambda: app.screen is screen, "back on Runs")
        assert screen.selected_id() == target
        # A run opened another way (here: by id, as `--run` and New run do) is the one selected.
        first = list(screen.items)[0]
        app.open_run(first)
        await wait_for_app(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        await pilot.press(back)
        await wait_for_app(pilot, lambda: app.screen is screen, "back on Runs")
        assert screen.selected_id() == first


# --- the run screen: help, sizes, the lower panes ---------------------------------------------


@pytest.mark.slow
async def test_help_on_the_run_screen_lists_end(app, run):
    async with app.run_test(size=(120, 40)) as pilot:
        await open_run_screen(pilot, run["id"])
        await pilot.press("question_mark")
        await wait_for_app(pilot, lambda: isinstance(app.screen, HelpScreen), "the help screen")
        keys = [line.split() for line in screen_text(app).splitlines()]
        assert any(words[1:4] == ["end", "Follow", "log"] for words in keys if len(words) > 3), screen_text(
            app
        )


async def test_the_sims_table_takes_only_the_rows_it_needs(app, http):
    run = await create_run(http, [("SM7_QV100", 1), ("SM7_TITANV", 1)])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_run_screen(pilot, run["id"])
        table = screen.query_one(SimTable)
        log = screen.query_one(LogView)
        # A header and two rows; the log gets the rest of 24 lines (less header, footer, titles).
        await wait_for_app(
            pilot,
            lambda: table.size.height == 3 and log.size.height >= 13,
            "a table of three lines and the log under it",
        )


@pytest.mark.slow
async def test_at_80_columns_the_log_header_and_footers_are_whole(app, http, run, qv100_log):
    sim = await play(http, run["sims"][0]["id"], qv100_log[:2000], end=None)
    async with app.run_test(size=(80, 24)) as pilot:
        await on_list(pilot, RunsScreen, [])
        await footer_whole(pilot)
        await pilot.press("t")
        await on_list(pilot, TracesScreen, [])
        await footer_whole(pilot)
        await pilot.press("r")
        await log_tail(pilot, run["id"], 2000)
        await footer_whole(pilot)
        await pilot.press("tab", "pageup")
        await sim.log(qv100_log[2000:2012])
        await wait_for_text(pilot, "▶ paused +12 lines (End to follow) · 2,012 lines")
        await footer_whole(pilot)
        await pilot.press("k")
        await wait_for_text(pilot, "▶ kernels")  # the kernels pane has the keys, and says so
        await footer_whole(pilot)


def test_at_80_columns_the_runs_list_keeps_the_replay_and_sample_markers():
    now = datetime(2026, 1, 1, tzinfo=UTC)
    rows = []
    for flags in ({"replay": True}, {"sample": True, "replay": True}):
        run = RunSummary(
            id="run-0123456789ab",
            trace_id="tinyformer-step-sm70",
            created_at=now,
            state="active",
            entries=[RunEntry(gpu_config="SM7_QV100", count=2)],
            sim_counts={"running": 1, "failed": 1},
            **flags,
        )
        rows.append(RunsScreen.row_cells(SimpleNamespace(marked=set()), run, now))  # no screen needed
    widths = fit(RunsScreen.COLUMNS, [[text for text, _ in row] for row in rows], 80)
    last = len(RunsScreen.COLUMNS) - 1
    assert widths[1] is not None and widths[1] >= len("tinyformer-step-sm70")
    assert widths[last] is not None
    # The marker and the first count whole (the rest of the column went to the run's `time`).
    assert rows[0][last][0][: widths[last]].startswith("stand-in: 1 ")
    assert rows[1][last][0][: widths[last]].startswith("sample: 1 ")


@pytest.mark.slow
@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_kernels_pane_fits_the_width_keeps_its_bars_and_shows_partial_totals(app, http, size):
    run = await create_run(http, [("SM7_QV100", 1), ("SM7_TITANV", 1)])
    sims = {s["gpu_config"]: s["id"] for s in run["sims"]}
    # Both running, kernels finished: no replica succeeded yet.
    await play(http, sims["SM7_QV100"], recorded_log("SM7_QV100")[:20_000], end=None)
    await play(http, sims["SM7_TITANV"], recorded_log("SM7_TITANV")[:12_000], end=None)
    async with app.run_test(size=size) as pilot:
        screen = await open_run_screen(pilot, run["id"])
        await pilot.press("k")
        chart = screen.query_one("#kernel-chart", KernelChart)
        await wait_for_text(pilot, "partial: ")
        text = screen_text(app)
        assert "Total simulated time per config so far" in text
        assert "no succeeded replica" not in text

        def widest() -> int:
            return max(sum(len(t) for t, _ in line) for line in chart.lines)

        def qv100_bar() -> int:
            line = next(line for line in chart.lines if line and "SM7_QV100" in line[0][0])
            return len(line[1][0])

        assert widest() <= chart.scrollable_content_region.width, (widest(), chart.size)
        bar_cells = qv100_bar()
        qv100 = sims["SM7_QV100"]
        await Simulator(http, qv100).beat("succeeded", exit_code=0)
        await wait_for_app(
            pilot,
            lambda: (
                screen.model.sims[qv100].state == "succeeded"
                and "✔ succeeded" in screen_text(app)
                and not screen.kernels_pane.dirty
            ),
            "the chart redrawn",
        )
        assert abs(qv100_bar() - bar_cells) <= 12, (bar_cells, qv100_bar())
        assert widest() <= chart.scrollable_content_region.width


# --- cursors in 16 and 256 colours and NO_COLOR ----------------------------------------------


def _lines_of(app: CascadeApp, system: str | None) -> list[list[Segment]]:
    console = Console(
        width=app.size.width,
        height=app.size.height,
        file=io.StringIO(),
        color_system=system,  # type: ignore[arg-type]
        no_color=system is None,
        legacy_windows=False,
    )
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    assert update is not None
    visible = (seg for seg in console.render(update) if not seg.control)  # not cursor moves
    return list(Segment.split_lines(visible))


def _readable_cursor(line: list[Segment], text: str, system: str | None) -> None:
    """The cell showing `text` on the cursor row: reversed (reads in any palette), and its
    visible background is not red (a failure colour) once downgraded to `system`."""
    seg = next(s for s in line if text in s.text)
    style = seg.style or Style()
    assert style.reverse, (system, text, style)
    shown_bg = style.color if style.reverse else style.bgcolor
    if system is not None and shown_bg is not None and shown_bg.type != ColorType.DEFAULT:
        target = ColorSystem.STANDARD if system == "standard" else ColorSystem.EIGHT_BIT
        downgraded = shown_bg.downgrade(target)
        assert downgraded.number not in (1, 9), (system, text, downgraded)


@pytest.mark.slow
@pytest.mark.parametrize("system", ["standard", "256", None])
async def test_every_cursor_reads_as_a_cursor_in_16_and_256_colours_and_no_color(app, http, system):
    run = await create_run(http, [("SM7_QV100", 1), ("SM7_TITANV", 1)])
    sims = {s["gpu_config"]: s["id"] for s in run["sims"]}
    await play(http, sims["SM7_TITANV"], recorded_log("SM7_TITANV")[:3000], end="failed")
    async with app.run_test(size=(100, 30)) as pilot:
        await on_list(pilot, RunsScreen, [run["id"]])
        await wait_for_text(pilot, run["id"])
        line = next(line for line in _lines_of(app, system) if run["id"] in "".join(s.text for s in line))
        _readable_cursor(line, run["id"], system)
        screen = await open_run_screen(pilot, run["id"])
        table = screen.query_one(SimTable)
        await wait_for_app(pilot, lambda: len(table.order) == 2, "both sims in the table")
        table.move_cursor_to(table.order.index(sims["SM7_TITANV"]))  # the failed sim
        await wait_for_app(
            pilot,
            lambda: any(
                "".join(s.text for s in line).startswith("SM7_TITANV") for line in _lines_of(app, system)
            ),
            "the row",
        )
        line = next(
            line for line in _lines_of(app, system) if "".join(s.text for s in line).startswith("SM7_TITANV")
        )
        _readable_cursor(line, "SM7_TITANV", system)
        _readable_cursor(line, "failed", system)


# --- quitting with sims running ---------------------------------------------------------------


@pytest.mark.slow
async def test_q_with_sims_running_asks_stay_keep_or_cancel(srv, app, http, tmp_path):
    run = await create_run(http, [("SM7_QV100", 2)])
    async with app.run_test(size=(80, 24)) as pilot:
        await on_list(pilot, RunsScreen, [run["id"]])
        await pilot.press("q")
        await wait_for_app(pilot, lambda: isinstance(app.screen, QuitScreen), "the question")
        text = screen_text(app)
        assert "cancel the runs and quit" in text and "quit, they keep running" in text
        assert "stay" in text and f"2 sims of 1 run ({run['id']})" in text
        await pilot.press("escape")
        await on_list(pilot, RunsScreen, [])
        assert app.is_running
        await pilot.press("q")
        await wait_for_app(pilot, lambda: isinstance(app.screen, QuitScreen), "the question")
        await pilot.press("c")
        await wait_for_app(pilot, lambda: not app.is_running, "the app to exit")
    assert (await http.get(f"/api/runs/{run['id']}")).json()["state"] == "cancelled"
    assert app.quit_outcome == QuitOutcome("cancelled", (run["id"],), 2)  # for the line after

    other = await create_run(http, [("SM7_QV100", 1)])
    app = make_app(srv, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await on_list(pilot, RunsScreen, [other["id"]])
        await pilot.press("q")
        await wait_for_app(pilot, lambda: isinstance(app.screen, QuitScreen), "the question")
        await pilot.press("q")
        await wait_for_app(pilot, lambda: not app.is_running, "the app to exit")
    assert (await http.get(f"/api/runs/{other['id']}")).json()["state"] == "active"
    assert app.quit_outcome == QuitOutcome("kept", (other["id"],), 1)


async def test_q_with_nothing_running_quits_at_once(app):
    async with app.run_test(size=(80, 24)) as pilot:
        await on_list(pilot, RunsScreen, [])
        await pilot.press("q")
        await wait_for_app(pilot, lambda: not app.is_running, "the app to exit")
    assert app.quit_outcome == QuitOutcome("none")


# --- snapshots --------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_snapshots_of_the_main_screens_in_16_and_256_colours(app, http, size):
    """The same text in 16 and 256 colours (the cursor test above checks their colours)."""
    run = await create_run(http, [("SM7_QV100", 1), ("SM7_TITANV", 1)])
    sims = {s["gpu_config"]: s["id"] for s in run["sims"]}
    await play(http, sims["SM7_QV100"], recorded_log("SM7_QV100"))
    await play(http, sims["SM7_TITANV"], recorded_log("SM7_TITANV")[:12_000], end="failed")
    name = f"{size[0]}x{size[1]}"
    async with app.run_test(size=size) as pilot:

        def snap(screen: str) -> None:
            texts = {
                system: "\n".join("".join(s.text for s in line).rstrip() for line in _lines_of(app, system))
                for system in ("standard", "256")
            }
            assert texts["standard"] == texts["256"]
            assert_snapshot(f"{screen}_{name}", screen_text(app), UPDATE)

        await on_list(pilot, RunsScreen, [run["id"]])
        await wait_for_text(pilot, "◐ partial")
        await wait_for_text(pilot, "? Help")  # the footer, rebuilt once the finished run is selected
        snap("runs")
        await pilot.press("t")
        await select(pilot, TracesScreen, "broken-upload", ["broken-upload", TRACE])
        await pilot.pause()
        snap("traces")
        await pilot.press("r")
        screen = await open_run_screen(pilot, run["id"])
        view = screen.query_one(LogView)
        await wait_for_app(
            pilot, lambda: view.store.lines[-1:] == ["GPGPU-Sim: *** exit detected ***"], "the log tail"
        )
        await wait_for_app(pilot, lambda: view.show_horizontal_scrollbar, "the log's scrollbar")
        await wait_for_text(pilot, "? Help")  # the footer, rebuilt once the run is seen finished
        await pilot.pause()
        snap("run")
        await pilot.press("k")
        await wait_for_text(pilot, "Total simulated time per config")
        await pilot.pause()
        snap("kernels")
