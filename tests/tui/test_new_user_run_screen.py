"""Issue 32 on the Run screen, as a new user meets it at 80x24: `z` twice leaves the keys where they
were, `● LIVE` only on a run still going, the help says what the kernels view's numbers are, and
the sweep chart's legend never sits on its points nor anything under its axis."""

from __future__ import annotations

import re

import pytest

from cascade_tui.panes.kernels_pane import KernelsPane
from cascade_tui.screens.modals import help_text
from cascade_tui.views.run_rows import connection_badge
from cascade_tui.widgets.sim_table import SimTable
from cascade_tui.widgets.sweep_plot import FRAME_ROWS, SweepPlot
from tests.conftest import write_config

from .conftest import create_run, make_app, open_run_screen, play, played_run, serve, tinyformer
from .helpers import screen_text, wait_for_app, wait_for_text
from .test_sweeps_tui import QV100, finished_sweep_run


@pytest.fixture
async def swept(make_server, accelsim_dir):
    """A server whose SM7_QV100 takes simulator options, as test_sweeps_tui's."""
    write_config(accelsim_dir, "SM7_QV100", QV100)
    return await serve(make_server, [tinyformer()], accelsim_dir=accelsim_dir)


def test_live_is_said_of_a_run_still_going_only():
    assert connection_badge("live", finished=False) == "[b green]● LIVE[/]"
    assert connection_badge("live", finished=True) == ""  # over: its state says so
    assert "OFFLINE" in connection_badge("offline", finished=True)  # a stream down is always said
    assert "try 2" in connection_badge("reconnecting", "try 2, next in 4s", finished=True)


async def test_z_twice_leaves_the_keys_where_they_were_and_live_only_while_active(app, http, qv100_log):
    done = await played_run(http, [("SM7_QV100", 1)])
    going = await create_run(http, [("SM7_QV100", 1)])
    await play(http, going["sims"][0]["id"], qv100_log[:2000], end=None)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_run_screen(pilot, done["id"])
        await wait_for_app(pilot, lambda: screen.model.is_finished(), "the finished run")
        await wait_for_text(pilot, "✔ succeeded")
        assert "LIVE" not in screen_text(app)
        table = screen.query_one(SimTable)
        assert app.focused is table
        await pilot.press("z", "z")
        assert app.focused is table  # from the sims table, back to it
        await pilot.press("k")
        chart = screen.kernels_pane.chart
        await wait_for_app(pilot, lambda: app.focused is chart, "the kernels chart has the keys")
        await pilot.press("z")
        assert screen.has_class("-zoomed") and app.focused is chart
        await pilot.press("z")
        assert not screen.has_class("-zoomed") and app.focused is chart  # it keeps them
        await pilot.press("escape")
        screen = await open_run_screen(pilot, going["id"])
        await wait_for_text(pilot, "● LIVE")  # a run still going: its events are live


async def test_the_help_says_what_the_kernels_views_numbers_are(app, http):
    run = await played_run(http, [("SM7_QV100", 1)])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_run_screen(pilot, run["id"])
        text = " ".join(help_text(screen, 80).plain.split())
        assert "Kernels view" in text and "MAPE with real timing: mean absolute percentage error" in text
        assert "Δ how much the configs disagree" in text


@pytest.mark.slow
async def test_the_sweep_charts_legend_is_above_its_points_and_nothing_is_under_its_axis(swept, tmp_path):
    run = await finished_sweep_run(swept)
    app = make_app(swept, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_run_screen(pilot, run["id"])
        await wait_for_app(pilot, lambda: screen.model.is_finished(), "the finished run")
        await pilot.press("k")
        await wait_for_text(pilot, "Tab: sims · z: chart")
        await pilot.press("z")
        text = await wait_for_text(pilot, "total simulated time (µs) vs gpgpu_n_clusters")
        plot = screen.query_one(KernelsPane).query_one(SweepPlot)
        lines = text.splitlines()
        top = next(i for i, line in enumerate(lines) if "┌" in line) + 1
        canvas = lines[top : top + plot.size.height - FRAME_ROWS]
        legend = [line for line in canvas if "variants" in line or "base" in line]
        assert len(legend) == plot.legend_rows() == 2
        for line in legend:  # the legend's own marks and words, and no point beside them
            inside = line.split("┤", 1)[1].rstrip("│ ")
            assert re.fullmatch(r" (•• variants|▞▞ SM7_QV100 base)", inside), line
        assert any("•" in line for line in canvas if line not in legend)  # the points are drawn
        # Under the tick values only the footer: the option is named in the title instead, so a
        # notification there hides no label.
        ticks = next(i for i, line in enumerate(lines) if "└" in line) + 1
        assert re.fullmatch(r"\s*20\s+55\s+90\s+125\s+160\s*", lines[ticks]) and "Back" in lines[ticks + 1]
