"""What a new user meets in a first session at 80x24 and 160x45 (issue 19): confirmations that
only `y` answers, New run picking what the Traces note names, the stand-in banner wherever
stand-in numbers show (and once only), list columns that use the width and mark every cut with
`…`, the help's columns, the log's filter and search wording. Against a real server (real port,
real SQLite, the real routes and event stream; sims played through the simulator endpoints with
recorded Accel-Sim logs)."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, OptionList

from cascade_core.models import RunEntry
from cascade_tui.screens.compare_runs import CompareRunsScreen
from cascade_tui.screens.modals import ConfirmScreen, HelpScreen, binding_rows
from cascade_tui.screens.new_run import NewRunScreen
from cascade_tui.screens.runs_list import RunsScreen
from cascade_tui.screens.traces_list import TracesScreen
from cascade_tui.views.columns import ColumnSpec, fit
from cascade_tui.views.script_views import entries_text
from tests.conftest import ready_trace

from .conftest import (
    TRACE,
    comparison,
    make_app,
    on_list,
    open_run_screen,
    played_run,
    sample_run,
    select,
    tinyformer,
)
from .helpers import screen_text, wait_for_app, wait_for_text

SHORT = "short-trace"  # 5 kernels: a recorded 15-kernel log played on it is stand-in numbers
LONG_MODEL = "tinyformer (synthetic one-layer transformer, 64 tokens)"


@pytest.fixture
def srv_traces():
    return [
        tinyformer(model=LONG_MODEL, sample_sim_configs=["SM7_QV100", "SM7_GV100", "SM7_TITANV"]),
        ready_trace(SHORT, kernels=5),
    ]


def no_cut_without_ellipsis(cells: list[str], full: list[str]) -> None:
    for shown, whole in zip(cells, full):
        assert shown == whole or (shown.endswith("…") and whole.startswith(shown[:-1])), (shown, whole)


# --- confirmations ------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("what", ["run", "trace"])
async def test_delete_is_confirmed_by_y_only_not_by_enter(app, http, what):
    run = await played_run(http, [("SM7_QV100", 1)], SHORT)
    async with app.run_test(size=(80, 24)) as pilot:
        await on_list(pilot, RunsScreen, [run["id"]])
        if what == "trace":
            await pilot.press("t")
            await select(pilot, TracesScreen, TRACE)
        await pilot.press("D")
        await wait_for_app(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        text = screen_text(app)
        assert "y: delete" in text and "Esc / n: keep it" in text and "Enter" not in text
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)  # Enter answered nothing
        await pilot.press("n")
        await wait_for_app(pilot, lambda: not isinstance(app.screen, ConfirmScreen), "the list")
        assert (await http.get(f"/api/runs/{run['id']}")).status_code == 200
        assert (await http.get(f"/api/traces/{TRACE}")).status_code == 200


# --- New run ------------------------------------------------------------------------------------


async def test_new_run_picks_the_suggested_config_only_and_space_moves_on(app, http):
    async with app.run_test(size=(80, 24)) as pilot:
        await on_list(pilot, RunsScreen, [])
        await pilot.press("t")
        await on_list(pilot, TracesScreen, [TRACE, SHORT])
        # What the note says `n` does, `n` does: the suggested config, or the user picks.
        notes = {
            t: app.screen.row_cells(app.screen.items[t], app.services.now())[-1][0] for t in (TRACE, SHORT)
        }
        assert notes == {TRACE: "n: run on SM7_QV100", SHORT: "n: new run, pick its configs"}
        app.screen.select(TRACE)
        await wait_for_app(pilot, lambda: app.screen.selected_id() == TRACE, "the cursor")
        await pilot.press("n")
        text = await wait_for_text(pilot, "1 config, 1 sim in total")
        assert "[x] SM7_QV100" in text
        assert "[x] SM7_GV100" not in text and "[x] SM7_TITANV" not in text
        screen = app.screen
        assert isinstance(screen, NewRunScreen)
        options = screen.query_one("#configs", OptionList)
        assert options.highlighted == [c.name for c in screen.configs].index("SM7_QV100")
        await pilot.press("space")  # unpicks SM7_QV100
        await wait_for_text(pilot, "Pick at least one config (space).")
        options.highlighted = 0
        await pilot.press("space", "space")  # picks the first two configs, row after row
        await wait_for_text(pilot, "2 configs, 2 sims in total")
        assert options.highlighted == 2
        options.highlighted = options.option_count - 1
        await pilot.press("space")  # the last row: the cursor stays (no wrapping to the top)
        await wait_for_text(pilot, "3 configs, 3 sims in total")
        assert options.highlighted == options.option_count - 1

        await pilot.press("right_square_bracket")  # the trace that suggests no config
        text = await wait_for_text(pilot, f"Trace {SHORT}")
        assert "[x]" not in text and "Pick at least one config (space)." in text


# --- compare runs -------------------------------------------------------------------------------


async def test_compare_of_stand_in_runs_shows_the_banner_and_no_ratio_or_spread(app, http):
    runs = [await played_run(http, [("SM7_QV100", 1)], SHORT) for _ in range(2)]
    async with app.run_test(size=(80, 24)) as pilot:
        listing = await on_list(pilot, RunsScreen, [r["id"] for r in runs])
        for run in runs:
            listing.select(run["id"])
            await wait_for_app(pilot, lambda run_id=run["id"]: listing.selected_id() == run_id, "the cursor")
            await pilot.press("space")
        await pilot.press("c")
        await comparison(pilot, CompareRunsScreen)
        text = screen_text(app)
        assert "⚠ Stand-in numbers, not a simulation of this trace" in " ".join(text.split())
        body = app.screen.text
        assert "ratio:" not in body and "spread" not in body and "x\n" not in body
        assert "No ratio and no kernel differences" in " ".join(body.split())


# --- the run screen -------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("view", ["k", "T"])
async def test_the_stand_in_banner_shows_once_in_the_kernels_and_steps_views(app, http, view):
    run = await played_run(http, [("SM7_QV100", 1), ("SM7_TITANV", 1)], SHORT)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_run_screen(pilot, run["id"])
        await wait_for_text(pilot, "⚠ Stand-in numbers")
        await pilot.press(view)
        await wait_for_app(
            pilot,
            lambda: ("fastest" if view == "k" else "predicted steps") in screen_text(app),
            "the view drawn",
        )
        assert screen_text(app).count("Stand-in numbers") == 1, screen_text(app)


@pytest.mark.slow
async def test_the_log_says_no_sim_matches_the_filter_and_search_counts_matches(app, http):
    run = await played_run(http, [("SM7_QV100", 1)], SHORT)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_run_screen(pilot, run["id"])
        await wait_for_app(
            pilot, lambda: screen.log_pane.sim_id and not screen.log_pane.loading, "the log loaded"
        )
        await pilot.press("slash")
        await pilot.press(*"kernel_name")
        await pilot.press("enter")
        total = screen.log_pane.view.store.count(screen.log_pane.view.pattern)
        assert total > 2
        await wait_for_text(pilot, f"match 1 of {total}")
        await pilot.press("n")
        await wait_for_text(pilot, f"match 2 of {total}")

        await pilot.press("escape")  # drops the search
        await pilot.press("v")  # running: the only sim has succeeded
        text = await wait_for_text(pilot, "no sim matches the filter 'running'")
        assert "no sim is running" not in text


@pytest.mark.slow
async def test_help_columns_never_run_into_each_other(app, http):
    run = await played_run(http, [("SM7_QV100", 1)], SHORT)
    async with app.run_test(size=(80, 24)) as pilot:
        for where in ("run", "runs"):
            if where == "run":
                await open_run_screen(pilot, run["id"])
            else:
                await pilot.press("escape")
                await on_list(pilot, RunsScreen, [run["id"]])
            below = app.screen
            ids = {binding_id for _, _, binding_id in binding_rows(below) if binding_id}
            await pilot.press("question_mark")
            await wait_for_app(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
            help_screen = app.screen
            await pilot.pause()
            body = help_screen.query_one("#help-body")
            # Inside the box's borders, as on screen.
            lines = [line.rstrip().rstrip("█▌▐").rstrip() for line in screen_text(app).splitlines()]
            # Every id starts in one column, after a space, and no line leaves the box.
            starts = {
                line.rindex(" " + line.split()[-1])
                for line in lines
                if line.split() and line.split()[-1] in ids
            }
            assert len(starts) == 1, "\n".join(lines)
            text = str(body.render())
            assert all(len(line) <= body.size.width for line in text.splitlines()), text
            await pilot.press("escape")
            await wait_for_app(pilot, lambda below=below: app.screen is below, "the help closed")


# --- the lists ----------------------------------------------------------------------------------


def test_list_columns_use_the_width_and_cut_with_an_ellipsis():
    specs = (ColumnSpec("trace", 24, 40, 0), ColumnSpec("model", 8, 24, 5), ColumnSpec("note", 16, 0, 0))
    rows = [["tinyformer-step-sm70", LONG_MODEL, "n: run on SM7_QV100"]]
    # Room for all: the model is not stopped at its max of 24.
    assert fit(specs, rows, 160)[1] == len(LONG_MODEL)
    # Narrow: every column gets its max first (the note is whole), then the model takes what
    # is left, and the widths fill the line exactly.
    widths = fit(specs, rows, 80)
    assert widths[2] == len(rows[0][2]) and 24 < widths[1] < len(LONG_MODEL)
    assert sum(widths) + 2 * len(widths) == 80
    # Narrower still: the model stops at its max while the free-text note takes the rest.
    widths = fit(specs, [[*rows[0][:2], "x" * 200]], 100)
    assert widths[1] == 24


async def test_runs_list_cuts_with_an_ellipsis_and_shows_configs_when_wide(make_server, tmp_path):
    server = await make_server(samples=True)
    sample = await sample_run(server)
    app = make_app(server, tmp_path)
    for size in ((80, 24), (160, 45)):
        async with app.run_test(size=size) as pilot:
            screen = await on_list(pilot, RunsScreen, [sample["id"]])
            await pilot.pause()
            table = screen.query_one(DataTable)
            titles = [str(c.label) for c in table.columns.values()]
            shown = [str(c) for c in table.get_row(sample["id"])]
            full = dict(
                zip(
                    [c.title for c in screen.COLUMNS],
                    [t for t, _ in screen.row_cells(screen.items[sample["id"]], app.services.now())],
                )
            )
            keep = [i for i, t in enumerate(titles) if t != "age"]  # the clock moves on
            no_cut_without_ellipsis([shown[i] for i in keep], [full[titles[i]] for i in keep])
            time_cell = shown[titles.index("time")]
            assert time_cell == "-"  # not `0s`: the results were recorded elsewhere
            assert "took 0s" not in screen_text(app) and "recorded results" in screen_text(app)
            if size == (160, 45):
                assert "configs" in titles  # as `cascade runs` writes them
                assert (
                    shown[titles.index("configs")]
                    == full["configs"]
                    == entries_text([RunEntry(**e) for e in sample["entries"]])
                )
        app = make_app(server, tmp_path)


# --- found in a first session over tmux at 80x24, TERM=screen --------------------------------------


async def test_new_run_at_80_columns_keeps_its_keys_whole_and_the_help_says_all(app, http):
    async with app.run_test(size=(80, 24)) as pilot:
        await on_list(pilot, RunsScreen, [])
        await pilot.press("t")
        await select(pilot, TracesScreen, TRACE, [TRACE, SHORT])
        await pilot.press("n")
        text = await wait_for_text(pilot, "1 config, 1 sim in total")
        lines = text.splitlines()
        # The footer keeps `? Help` whole; the key hints are one line (no `Enter:` apart from
        # `launch`).
        assert "q Quit" in lines[-1] and "? Help" in lines[-1] and "space Pick config" in lines[-1]
        assert any(line.strip().endswith("Enter: launch   Esc: back") for line in lines), text
        # The help and the palette say what space does in full.
        rows = {binding_id: description for _, description, binding_id in binding_rows(app.screen)}
        assert rows["new_run.toggle"] == "Pick or unpick a config, then the next row"
        assert "Pick or unpick a config, then the next row" in [
            c.title for c in app.get_system_commands(app.screen)
        ]


@pytest.mark.slow
async def test_the_run_header_marks_its_cut_at_80_columns(make_server, tmp_path):
    server = await make_server(samples=True)
    sample = await sample_run(server)
    app = make_app(server, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_run_screen(pilot, sample["id"])
        text = await wait_for_text(pilot, "recorded results")
        header = next(line for line in text.splitlines() if "recorded results" in line)
        # The trace id does not fit: cut with `…`, not wrapped out of sight after `trace`.
        assert header.rstrip().endswith("…") and "trace sample_" in header, header


@pytest.mark.slow
async def test_the_configs_column_shows_only_with_room_for_more_than_one_name(make_server, tmp_path):
    # Squeezed to 12 cells at 100 columns, `SM7_QV100 S…` read as a run of one config and cut
    # the trace and sims cells beside it.
    server = await make_server(samples=True)
    sample = await sample_run(server)
    for size in ((100, 30), (120, 30)):
        app = make_app(server, tmp_path)
        async with app.run_test(size=size) as pilot:
            await on_list(pilot, RunsScreen, [sample["id"]])
            await pilot.pause()
            table = app.screen.query_one(DataTable)
            titles = [str(c.label) for c in table.columns.values()]
            if "configs" in titles:
                cell = str(table.get_row(sample["id"])[titles.index("configs")])
                names = entries_text([RunEntry(**e) for e in sample["entries"]]).split()
                assert sum(name in names for name in cell.rstrip("…").split()) >= 2, cell
            else:
                assert size == (100, 30)
