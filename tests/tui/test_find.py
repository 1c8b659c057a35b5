"""Find (issue 13): `/` filters and `s`/`S` sort the Runs and Traces lists, `v` filters the sims
table by state, and vim keys move where they do not clash. Pure parts first, then the screens
against a real server."""

from __future__ import annotations

import pytest
from textual.binding import Binding

from cascade_tui.screens.runs_list import RunsScreen
from cascade_tui.screens.traces_list import TracesScreen
from cascade_tui.views import filter_sort, simrows
from cascade_tui.widgets.sim_table import SimTable

from .conftest import TRACE, create_run, on_list, open_run_screen
from .factories import T0, sim
from .helpers import Simulator, screen_text, wait_for_app, wait_for_text


def test_filter_words_all_match_case_ignored_and_sort_is_stable():
    items = [
        "run-1 tinyformer SM7_QV100 failed",
        "run-2 tinyformer SM75_RTX2060 active",
        "run-3 other SM75_RTX2060 failed",
    ]
    assert filter_sort.shown(items, "sm75 FAILED", str) == [items[2]]
    assert filter_sort.shown(items, "", str) == items
    by_trace = filter_sort.shown(items, "", str, lambda s: s.split()[1])
    assert by_trace == [items[2], items[0], items[1]]  # equal traces keep the server's order
    assert filter_sort.next_column(None, 3) == 0 and filter_sort.next_column(2, 3) is None


def test_sims_state_filters_cycle_and_keep_what_they_say():
    sims = [
        sim(f"s{i}", state=state)
        for i, state in enumerate(["running", "launching", "failed", "lost", "succeeded", "pending"])
    ]
    ids = {name: simrows.sorted_ids(sims, "config", False, T0, name) for name in simrows.STATE_FILTERS}
    assert ids["all"] == [s.id for s in sims]
    assert ids["running"] == ["s0", "s1"] and ids["failed"] == ["s2", "s3"]
    assert ids["not succeeded"] == ["s0", "s1", "s2", "s3", "s5"]
    names = ["all"]
    for _ in range(4):
        names.append(simrows.next_state_filter(names[-1]))
    assert names == ["all", "running", "failed", "not succeeded", "all"]


async def test_slash_filters_the_runs_list_by_config_and_esc_clears(app, http):
    qv = await create_run(http, [("SM7_QV100", 1)])
    titan = await create_run(http, [("SM7_TITANV", 1)])
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await on_list(pilot, RunsScreen, [qv["id"], titan["id"]])
        await pilot.press("slash", *"titanv")
        await wait_for_app(pilot, lambda: list(screen.items) == [titan["id"]], "only the TITANV run")
        assert "filter 'titanv': 1 of 2" in screen_text(app)
        await pilot.press("enter")  # keeps the filter, the keys go back to the list
        await wait_for_app(pilot, lambda: screen.query_one("#list").has_focus, "the list focused")
        assert list(screen.items) == [titan["id"]]
        await pilot.press("slash", "escape")
        await wait_for_app(pilot, lambda: len(screen.items) == 2, "both runs again")


async def test_s_sorts_the_traces_list_by_each_column_and_S_reverses(app):
    async with app.run_test(size=(100, 30)) as pilot:
        await on_list(pilot, RunsScreen, [])
        await pilot.press("t")
        screen = await on_list(pilot, TracesScreen, ["broken-upload", TRACE])
        await pilot.press("s")  # by trace id
        await wait_for_app(pilot, lambda: list(screen.items) == ["broken-upload", TRACE], "by id")
        assert "by trace▲" in screen_text(app)
        await pilot.press("S")
        await wait_for_app(pilot, lambda: list(screen.items) == [TRACE, "broken-upload"], "reversed")
        assert "by trace▼" in screen_text(app)


@pytest.mark.slow
async def test_vim_keys_move_in_the_lists_and_the_sims_table(app, http):
    runs = [await create_run(http, [("SM7_QV100", 1), ("SM7_TITANV", 1)]) for _ in range(3)]
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await on_list(pilot, RunsScreen, [r["id"] for r in runs])
        order = list(screen.items)
        await pilot.press("j")
        await wait_for_app(pilot, lambda: screen.selected_id() == order[1], "j: down")
        await pilot.press("k")
        await wait_for_app(pilot, lambda: screen.selected_id() == order[0], "k: up")
        await pilot.press("G")
        await wait_for_app(pilot, lambda: screen.selected_id() == order[-1], "G: the last")
        run_screen = await open_run_screen(pilot, order[-1])
        table = run_screen.query_one(SimTable)
        await wait_for_app(pilot, lambda: len(table.order) == 2, "both sims")
        await pilot.press("G")
        assert table.cursor_index == 1
        await pilot.press("home", "j")
        assert table.cursor_index == 1


async def test_v_filters_the_sims_table_by_state(app, http):
    run = await create_run(http, [("SM7_QV100", 1), ("SM7_TITANV", 1)])
    sims = {s["gpu_config"]: s["id"] for s in run["sims"]}
    await Simulator(http, sims["SM7_QV100"]).beat("running")
    failing = Simulator(http, sims["SM7_TITANV"])
    await failing.beat("running")
    await failing.beat("failed", exit_code=1, error="boom")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_run_screen(pilot, run["id"])
        table = screen.query_one(SimTable)
        await wait_for_app(pilot, lambda: len(table.order) == 2, "both sims")
        expected = {
            "running": [sims["SM7_QV100"]],
            "failed": [sims["SM7_TITANV"]],
            "not succeeded": sorted(sims.values(), key=lambda i: i != sims["SM7_QV100"]),
            "all": None,
        }
        for name, ids in expected.items():
            await pilot.press("v")
            await wait_for_app(pilot, lambda want=name: table.state_filter == want, name)
            if ids is not None:
                assert table.order == ids, (name, table.order)
                assert f"showing {name}" in screen_text(app)
        assert len(table.order) == 2 and "showing" not in screen_text(app)


@pytest.mark.parametrize("screen_type", [RunsScreen, TracesScreen])
def test_every_list_key_is_a_binding_with_an_id(screen_type):
    bindings = [
        b
        for cls in screen_type.__mro__
        if cls.__module__.startswith("cascade_tui")
        for b in getattr(cls, "BINDINGS", [])
        if isinstance(b, Binding)
    ]
    assert all(b.id for b in bindings), [b for b in bindings if not b.id]
    assert {"list.filter", "list.sort", "list.reverse_sort"} <= {b.id for b in bindings}


# --- zoom and wrap (issue 13) ------------------------------------------------------------------


def test_wrapped_window_fills_from_the_top_or_bottom_aligned_when_following():
    from cascade_tui.views.loglines import wrapped_window

    lines = ["a" * 25, "b", "c" * 10, "d" * 12]
    # width 10: a -> 3 pieces, b -> 1, c -> 1, d -> 2
    assert wrapped_window(lines, 0, 10, 4, at_end=False) == [(0, 0), (0, 10), (0, 20), (1, 0)]
    assert wrapped_window(lines, 1, 10, 10, at_end=False) == [(1, 0), (2, 0), (3, 0), (3, 10)]
    # Following: the newest line whole at the bottom.
    assert wrapped_window(lines, 0, 10, 3, at_end=True) == [(2, 0), (3, 0), (3, 10)]
    assert wrapped_window([], 0, 10, 3, at_end=True) == []


@pytest.mark.slow
async def test_z_zooms_the_lower_pane_and_w_wraps_the_log(app, http, run):
    from cascade_tui.widgets.log_view import LogView

    sim_ = Simulator(http, run["sims"][0]["id"])
    await sim_.beat("running")
    long_line = "x" * 150 + " THE-END"
    await sim_.log([f"line {i}" for i in range(50)] + [long_line])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_run_screen(pilot, run["id"])
        view = screen.query_one(LogView)
        table = screen.query_one(SimTable)
        await wait_for_app(pilot, lambda: len(view.store) == 51, "the log")
        before = view.size.height
        await pilot.press("z")
        await wait_for_app(pilot, lambda: not table.display or table.size.height == 0, "the table hidden")
        await wait_for_app(pilot, lambda: view.size.height > before + 2, "the log taller")
        assert view.has_focus and "config" not in screen_text(app).splitlines()[2]
        assert "THE-END" not in screen_text(app)  # cut at the right edge
        await pilot.press("w")
        await wait_for_text(pilot, "THE-END")  # wrapped: the whole line on screen
        assert not view.show_horizontal_scrollbar
        await pilot.press("z")
        await wait_for_app(pilot, lambda: table.size.height == 2 and table.has_focus, "the table back")
        await pilot.press("w")
        await wait_for_app(pilot, lambda: "THE-END" not in screen_text(app), "lines cut again")


@pytest.mark.slow
async def test_slash_filters_the_traces_list_and_s_sorts_the_runs_list(app, http):
    done = await create_run(http, [("SM7_QV100", 1)])
    await Simulator(http, done["sims"][0]["id"]).beat("succeeded", exit_code=0)
    going = await create_run(http, [("SM7_TITANV", 1)])  # newest first: this one on top
    async with app.run_test(size=(100, 30)) as pilot:
        runs = await on_list(pilot, RunsScreen, [done["id"], going["id"]])
        assert list(runs.items) == [going["id"], done["id"]]
        await pilot.press("s", "s", "s")  # run, trace, then state
        await wait_for_app(pilot, lambda: "by state▲" in screen_text(app), "sorted by state")
        assert list(runs.items) == [going["id"], done["id"]]  # ● active before ✔ succeeded
        await pilot.press("S")
        await wait_for_app(pilot, lambda: list(runs.items) == [done["id"], going["id"]], "reversed")
        assert "by state▼" in screen_text(app)

        await pilot.press("t")
        traces = await on_list(pilot, TracesScreen, ["broken-upload", TRACE])
        await pilot.press("slash", *"failed")
        await wait_for_app(pilot, lambda: list(traces.items) == ["broken-upload"], "only the failed trace")
        assert "filter 'failed': 1 of 2" in screen_text(app)
        await pilot.press("escape")
        await wait_for_app(pilot, lambda: len(traces.items) == 2, "both traces again")
