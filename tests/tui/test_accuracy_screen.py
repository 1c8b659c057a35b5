"""Issue 22: the Accuracy screen, opened with `y` on the Traces list: the table of rows, the
log-log scatter of the selected row and its worst kernels, at 80x24 and 160x45."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from textual.widgets import DataTable

from cascade_tui.screens.accuracy import AccuracyScreen
from cascade_tui.screens.modals import help_text
from cascade_tui.screens.traces_list import TracesScreen
from tests.conftest import ready_trace
from tests.helpers import recorded_kernel_names, store_real_timing
from tests.timeline.profiles import SAMPLED, load, steps_by_correlation, write_trace_dir

from .conftest import UPDATE, make_app, on_list, played_run, serve
from .helpers import assert_snapshot, screen_text, wait_for_app, wait_for_text

TRACE = "profiled"


@pytest.fixture
def srv_traces():
    return []


@pytest.fixture
async def srv(srv):
    """The trace's real kernel times, imported from a sampled profile (`cascade timeline import`),
    stored as the server stores them when the trace becomes ready. Its kernels are named as the
    recorded logs the sims play name them (accuracy pairs only the times of one kernel)."""
    directory = srv.settings.traces_dir / TRACE
    write_trace_dir(directory, steps_by_correlation(load(SAMPLED))[0][:15])
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cascade_tui.cli",
            "timeline",
            "import",
            str(SAMPLED),
            str(directory),
            "--min-coverage",
            "0",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    real = json.loads((directory / "real_timing.json").read_text())
    trace = ready_trace(TRACE, metadata=None)
    for kernel, row, name in zip(trace.kernels, real["kernels"], recorded_kernel_names()):
        kernel.name = row["kernel_name"] = name
    assert (await store_real_timing(srv.store, trace, real)).has_real_timing
    return srv


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_the_accuracy_screen_shows_rows_scatter_and_worst_kernels(app, http, size):
    entries = [("SM7_QV100", 1), ("SM7_TITANV", 1), ("SM7_QV100", 1, {"-gpgpu_n_clusters": "40"})]
    await played_run(http, entries, TRACE)
    async with app.run_test(size=size) as pilot:
        await wait_for_text(pilot, "Runs")
        await pilot.press("t")
        await on_list(pilot, TracesScreen, [TRACE])
        await wait_for_text(pilot, "Real kernel times")  # the detail line says what y opens on
        await pilot.press("y")
        await wait_for_app(pilot, lambda: isinstance(app.screen, AccuracyScreen), "the Accuracy screen")
        await wait_for_text(pilot, "Worst kernels")
        screen = app.screen
        assert isinstance(screen, AccuracyScreen)
        assert [r.label for r in screen.rows] == ["SM7_QV100", "SM7_QV100[gpgpu_n_clusters=40]", "SM7_TITANV"]
        assert all(r.kernels == 15 and r.points and len(r.points) == 15 for r in screen.rows)
        text = screen_text(app)
        assert "SM7_QV100" in text and "MAPE" in text
        # The label not read as markup; whole where the table has room, else cut in its middle
        # (issue 32: at 80 columns the table fits, no sideways scrolling), its value kept.
        wanted = "SM7_QV100[gpgpu_n_clusters=40]" if size[0] > 80 else "SM7_QV100[gp…clusters=40]"
        assert wanted in text, text
        # The table's height follows its rows a refresh later: until then a vertical scrollbar
        # takes two columns (on a loaded machine the snapshot caught it once).
        table = screen.query_one(DataTable)
        await wait_for_app(
            pilot,
            lambda: (
                not table.show_vertical_scrollbar
                and table.scrollable_content_region.width == table.size.width
            ),
            "the table to fit its rows",
        )
        await pilot.pause()  # and laid out again without the scrollbar's gutter
        text = screen_text(app)
        assert_snapshot(f"accuracy_{size[0]}x{size[1]}", text, UPDATE)
        await pilot.press("down", "down")
        await wait_for_text(pilot, "profiled on SM7_TITANV")
        await pilot.press("escape")
        await wait_for_app(pilot, lambda: isinstance(app.screen, TracesScreen), "back to the Traces list")


async def test_with_no_real_timing_the_accuracy_screen_says_how_rows_come_and_draws_no_empty_chart(
    make_server, tmp_path
):
    server = await serve(make_server, [ready_trace("untimed", has_real_timing=False, metadata=None)])
    app = make_app(server, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_text(pilot, "Runs")
        await pilot.press("t")
        await on_list(pilot, TracesScreen, ["untimed"])
        await pilot.press("y")
        await wait_for_app(pilot, lambda: isinstance(app.screen, AccuracyScreen), "the Accuracy screen")
        text = await wait_for_text(pilot, "No trace with real timing has finished real sims yet.")
        assert "timeline import" in " ".join(text.split())  # how a trace gets real timing
        assert not app.screen.query_one("#accuracy-lower").display
        assert "┌" not in text and "┤" not in text  # no empty chart frame
        assert app.errors == []


async def test_at_80_columns_the_table_fits_and_the_help_explains_mape_bias_and_r(app, http):
    """Issue 32: the table never scrolls sideways (columns fit the width, long names cut with
    `…`, the least useful column dropped first), and `?` says what MAPE, bias and r are."""
    entries = [("SM7_QV100", 1), ("SM7_TITANV", 1), ("SM7_QV100", 1, {"-gpgpu_n_clusters": "40"})]
    await played_run(http, entries, TRACE)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_text(pilot, "Runs")
        await pilot.press("t")
        await on_list(pilot, TracesScreen, [TRACE])
        await pilot.press("y")
        await wait_for_app(pilot, lambda: isinstance(app.screen, AccuracyScreen), "the Accuracy screen")
        await wait_for_text(pilot, "Worst kernels")
        table = app.screen.query_one(DataTable)
        await wait_for_app(
            pilot,
            lambda: table.virtual_size.width <= table.scrollable_content_region.width,
            "a table that fits",
        )
        header = next(line for line in screen_text(app).splitlines() if line.startswith(" trace"))
        assert "MAPE" in header and "bias" in header and "r (log)" in header
        await pilot.resize_terminal(60, 24)  # narrower still: a column goes, none is cut in half
        await wait_for_app(
            pilot, lambda: table.virtual_size.width <= table.scrollable_content_region.width, "still fits"
        )
        await pilot.resize_terminal(80, 24)
        text = " ".join(help_text(app.screen, 80).plain.split())
        for words in ("MAPE mean absolute percentage error", "bias the mean signed error", "r (log) Pearson"):
            assert words in text, words
        await pilot.press("question_mark")
        await wait_for_text(pilot, "Accuracy columns")
