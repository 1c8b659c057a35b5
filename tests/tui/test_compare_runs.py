"""Compare runs (issue 13): mark runs with space, `c` shows per config each run's simulated total
with the ratio, and the kernels that differ most. Pure maths first, then the screen."""

from __future__ import annotations

import pytest

from cascade_tui.screens.compare_runs import CompareRunsScreen
from cascade_tui.screens.runs_list import RunsScreen
from cascade_tui.views import runcompare

from .conftest import comparison, on_list, open_run_screen, played_run
from .factories import kstat, run, sim
from .helpers import screen_text, wait_for_app


def _data(run_id: str, ns: dict[str, list[float]]) -> runcompare.RunData:
    # Every kernel of the trace finished: real numbers, not the stand-in's.
    sims = [
        sim(
            f"{run_id}-{cfg}",
            run_id=run_id,
            gpu_config=cfg,
            state="succeeded",
            kernels_done=2,
            kernels_total=2,
        )
        for cfg in ns
    ]
    kernels = [
        kstat(f"{run_id}-{cfg}", i, v, name=f"_Z1kv{i}")
        for cfg, values in ns.items()
        for i, v in enumerate(values)
    ]
    return runcompare.RunData(run(sims, id=run_id), kernels)


def test_totals_side_by_side_with_the_ratio_and_kernels_by_largest_spread():
    first = _data("run-a", {"A": [100.0, 100.0], "B": [50.0, 50.0]})
    second = _data("run-b", {"A": [100.0, 300.0]})
    totals = dict(runcompare.config_totals([first, second]))
    assert totals == {"A": (200.0, 400.0), "B": (100.0, None)}
    assert runcompare.ratio(totals["A"]) == 2.0 and runcompare.ratio(totals["B"]) is None
    diffs = runcompare.kernel_differences([first, second])
    assert [(d.kernel_index, d.config, d.spread_pct) for d in diffs] == [(1, "A", 200.0), (0, "A", 0.0)]
    text = "\n".join(runcompare.lines([first, second]))
    assert "2.000x" in text and "+200.0%" in text


@pytest.mark.slow
async def test_mark_two_runs_and_compare_them(app, http):
    runs = [await played_run(http, [("SM7_QV100", 1)]) for _ in range(2)]
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await on_list(pilot, RunsScreen, [r["id"] for r in runs])
        await pilot.press("c")  # nothing marked: says how
        assert not isinstance(app.screen, CompareRunsScreen)
        await pilot.press("home", "space", "space")
        await wait_for_app(pilot, lambda: screen.marked == {r["id"] for r in runs}, "both marked")
        assert screen_text(app).count("+run-") == 2
        await pilot.press("c")
        text = await comparison(pilot, CompareRunsScreen, "1.000x")
        assert f"Comparing 2 runs: {runs[0]['id']}" in text  # oldest first
        assert "SM7_QV100" in text and "+0.0%" in text
        ids = [r["id"] for r in runs]
        headings = [line.split() for line in text.splitlines()]
        assert ["config", *ids, "ratio"] in headings  # run ids whole, every column headed
        assert ["kernel", "config", *ids, "spread"] in headings
        assert max(map(len, text.splitlines())) <= 117  # fitted to the width
        await pilot.press("escape")
        await wait_for_app(pilot, lambda: app.screen is screen, "back on Runs")


def test_kernels_view_orders_by_time_or_spread_with_share_and_delta():
    from cascade_core.models import ComparisonRow
    from cascade_tui.views import chart, compare

    rows = [
        ComparisonRow(kernel_index=0, kernel_name="_Z1av", sim_ns={"A": 10.0, "B": 30.0}),
        ComparisonRow(kernel_index=1, kernel_name="_Z1bv", sim_ns={"A": 90.0, "B": 100.0}),
    ]
    assert compare.kernel_spread(rows[0]) == 200.0
    assert compare.kernel_share(rows[1], {"A": 100.0, "B": 130.0}) == 90.0
    assert [r.kernel_index for r in compare.order_kernel_rows(rows, "time")] == [1, 0]
    assert [r.kernel_index for r in compare.order_kernel_rows(rows, "spread")] == [0, 1]
    totals = [
        compare.ConfigTotal("A", 100.0, 100.0, 100.0, 1, 1),
        compare.ConfigTotal("B", 130.0, 130.0, 130.0, 1, 1),
    ]
    text = chart.plain(
        chart.chart_lines(["A", "B"], rows, totals, compare.rank(totals), {}, False, 100, order="time")
    )
    assert text.index("#1 b") < text.index("#0 a")
    assert "share 90.0%  Δ +11.1%" in text and "share 23.1%  Δ +200.0%" in text


@pytest.mark.slow
async def test_o_orders_the_kernels_view_by_time_then_spread_with_share_and_delta(app, http):
    """On a real run of two configs (recorded Accel-Sim logs): `o` cycles as traced → longest
    first → largest spread first, and each kernel line shows its share and Δ."""
    from cascade_tui.widgets.kernel_chart import KernelChart

    run = await played_run(http, [("SM7_QV100", 1), ("SM7_TITANV", 1)])
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_run_screen(pilot, run["id"])
        await pilot.press("k")
        chart = screen.query_one("#kernel-chart", KernelChart)

        def kernel_order() -> list[str]:
            text = "\n".join("".join(t for t, _ in line) for line in chart.lines)
            return [line.split()[0] for line in text.splitlines() if line.lstrip().startswith("#")]

        await wait_for_app(pilot, lambda: len(kernel_order()) == 15, "15 kernels in the chart")
        assert kernel_order() == [f"#{i}" for i in range(15)]  # as traced
        for order in ("time", "spread"):
            await pilot.press("o")
            await wait_for_app(
                pilot, lambda order=order: f"by {order}, o: order" in screen_text(app), f"by {order}"
            )
            await wait_for_app(
                pilot,
                lambda: kernel_order() != [f"#{i}" for i in range(15)],
                f"the kernels reordered by {order}",
            )
        text = "\n".join("".join(t for t, _ in line) for line in chart.lines)
        assert "share " in text and "Δ +" in text
        spreads = [float(part.split("Δ ")[1].split("%")[0]) for part in text.splitlines() if "Δ " in part]
        assert spreads == sorted(spreads, reverse=True)  # largest spread first


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_end_in_the_kernels_view_shows_its_last_line(app, http, size):
    """The scroll animates through fractions of a row; Textual repaints when the rounded position
    changes, so the lines painted must follow the rounded position too (truncated, the view
    stopped a row short: the last config's bar of the last kernel never showed)."""
    from cascade_tui.widgets.kernel_chart import KernelChart

    run = await played_run(http, [("SM7_QV100", 1), ("SM7_TITANV", 1)])
    async with app.run_test(size=size) as pilot:
        screen = await open_run_screen(pilot, run["id"])
        await pilot.press("k")
        chart = screen.query_one("#kernel-chart", KernelChart)
        await wait_for_app(
            pilot, lambda: len(chart.lines) > chart.size.height > 0, "a chart taller than its pane"
        )
        last = "".join(t for t, _ in chart.lines[-1]).rstrip()
        await pilot.press("end")
        await wait_for_app(pilot, lambda: chart.scroll_y == chart.max_scroll_y, "the end")
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()

        def last_line_shown() -> bool:
            shown = screen_text(app).splitlines()
            footer = next(i for i, line in enumerate(shown) if "esc Back" in line)
            return shown[footer - 1].rstrip() == "".join(t for t, _ in chart.lines[-1]).rstrip()

        assert last_line_shown(), screen_text(app)
        assert "".join(t for t, _ in chart.lines[-1]).rstrip() == last
        # Read at the end, a resize (the lines built again to the new width) keeps it there.
        await pilot.resize_terminal(120 if size[0] != 120 else 100, 40)
        await wait_for_app(pilot, last_line_shown, "the last line still shown after a resize")
