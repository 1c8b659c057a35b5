"""The kernels pane: total simulated time per config and per-kernel bars, from the run model,
with real time (and MAPE) from the server's comparison when the trace has real timing, and a power
run's power per kernel and energy per config (AccelWattch). A sweep run
(entries with simulator options) names its variants by what differs, shows each as a multiple of
the unmodified config, and, for one swept numeric option, charts total simulated time against the
swept value (textual-plotext) beside the bars (under them when the pane is narrow)."""

from __future__ import annotations

import time

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from cascade_core.comparison import RealTiming, trace_kernel_names

from ..connection.client_errors import ApiError
from ..messages import ReportsWorkerErrors
from ..services import Services
from ..views import chart, compare, power, sweep
from ..views.reducer import RunModel
from ..widgets.kernel_chart import KernelChart
from ..widgets.sweep_plot import SweepPlot

COMPARISON_REFRESH_S = 5.0
WIDE_FOR_SIDE_PLOT = 120  # columns from which the sweep chart sits beside the bars, not under them
PLOT_ROWS_UNDER = 20  # pane rows from which the chart fits under the bars (fewer: `z` zooms to it)
PLOT_ROWS_BESIDE = 10


class KernelsPane(ReportsWorkerErrors, Vertical):
    # The chart and the plot are the pane's own children (the run screen's tests and code find
    # the kernels chart as the first KernelChart); beside each other, the pane is a grid.
    DEFAULT_CSS = """
    KernelsPane #sweep-plot { height: 45%; min-height: 8; }
    KernelsPane.-side-plot { layout: grid; grid-size: 2 2; grid-columns: 1fr 40%; grid-rows: auto 1fr; }
    KernelsPane.-side-plot #kernels-title { column-span: 2; }
    KernelsPane.-side-plot #sweep-plot { height: 1fr; }
    """

    ERROR_TITLES = {"trace-names": "Trace kernels failed", "comparison": "Comparison failed"}

    def __init__(self, run_id: str, model: RunModel, services: Services, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.run_id = run_id
        self.model = model
        self.services = services
        self.dirty = True  # kernels or sims changed since the chart was drawn
        self._real: RealTiming = ()  # the server's real timing, row by row
        # The trace's kernel names by position: what a row no sim has finished yet is called
        # (a sharded run's shard that is behind); fetched once, when such a row first shows.
        self._trace_names: list[str] | None = None
        self._last_comparison = 0.0
        self.order = "trace"  # compare.KERNEL_ORDERS: how the per-kernel bars are sorted
        self.series: sweep.SweepSeries | None = None  # what the sweep chart draws, when it shows

    def compose(self) -> ComposeResult:
        yield Static("", id="kernels-title")
        yield KernelChart(id="kernel-chart")
        yield SweepPlot(id="sweep-plot")

    def on_mount(self) -> None:
        self.query_one("#sweep-plot").display = False
        self.refresh_title()

    def refresh_title(self) -> None:
        """`▶` while the chart has the keys (they scroll it), as the log pane's title does."""
        title = "kernels: simulated time per config and per kernel"
        if self.chart.has_focus:
            title = f"▶ {title} · Tab: sims"
        if self.series is not None and not self._room_for_plot():
            title += " · z: chart"  # zoomed, the sweep chart fits
        self.query_one("#kernels-title", Static).update(title)

    def next_order(self) -> str:
        orders = compare.KERNEL_ORDERS
        self.order = orders[(orders.index(self.order) + 1) % len(orders)]
        self.dirty = True  # drawn now if shown, else when it is
        self.draw()
        return self.order

    def on_resize(self) -> None:
        self.set_class(self.size.width >= WIDE_FOR_SIDE_PLOT, "wide")
        self.dirty = True  # whether the sweep chart fits follows the pane's size
        self.call_after_refresh(self.draw)

    @on(KernelChart.Resized)
    def _chart_resized(self, event: KernelChart.Resized) -> None:
        event.stop()
        self.dirty = True  # the lines are built to the chart's width
        self.draw()

    def on_descendant_focus(self) -> None:
        self.refresh_title()

    def on_descendant_blur(self) -> None:
        self.refresh_title()

    @property
    def chart(self) -> KernelChart:
        return self.query_one(KernelChart)

    def draw(self) -> None:
        model = self.model
        widget = self.chart
        width = widget.scrollable_content_region.width
        if model.run is None or width <= 0:
            return  # not laid out yet (hidden): drawn when shown, at its real width
        self.dirty = False
        configs = compare.config_order((e.variant for e in model.run.entries), model.sims.values())
        kernels = model.all_kernels()
        rows = compare.kernel_rows(configs, model.sims, kernels, self._real, self._trace_names or ())
        if self._trace_names is None and any(not row.kernel_name for row in rows):
            self._trace_names = []  # asked once
            self.load_trace_names()
        totals = compare.config_totals(configs, model.sims, kernels)
        has_real = model.run.trace.has_real_timing
        stand_in = compare.stand_in_reason(model.summary(), model.sims.values())
        view = sweep.sweep_view(model.run.entries, totals)
        widget.set_lines(
            chart.chart_lines(
                configs,
                rows,
                totals,
                compare.rank(totals),
                compare.mape(rows, configs),
                has_real,
                width,
                stand_in,
                finished=model.is_finished(),
                order=self.order,
                sweep=view,
                failures=compare.failure_reasons(kernels, model.sims),
                power=power.kernel_power(model.sims, kernels),
            )
        )
        series = sweep.sweep_series(view.variants, totals) if view and not stand_in else None
        self.draw_series(series)
        if has_real and not model.is_finished():
            self.load_comparison()

    def draw_series(self, series: sweep.SweepSeries | None) -> None:
        """The sweep chart: total simulated time per swept value, a line per config, and the
        unmodified config's total as a flat line; hidden when the run is no such sweep."""
        plot = self.query_one("#sweep-plot", SweepPlot)
        show = series is not None and self._room_for_plot()
        # Beside the bars or under them follows the pane's width on every draw, not only when
        # the series changes: a pane first drawn narrow (or before its first resize) that is
        # widened must move the chart beside the bars.
        side = show and self.has_class("wide")
        # Moved beside the bars or back, the bars get another width: the chart's resize
        # (`_chart_resized`) builds them again once laid out.
        moved = plot.display != show or self.has_class("-side-plot") != side
        if not moved and series == self.series:
            return
        self.series = series
        plot.display = show
        self.set_class(side, "-side-plot")
        self.refresh_title()
        if series is None or not show:
            return
        plot.show(series)

    def _room_for_plot(self) -> bool:
        return self.size.height >= (PLOT_ROWS_BESIDE if self.has_class("wide") else PLOT_ROWS_UNDER)

    @work(exclusive=True, group="trace-names", exit_on_error=False)
    async def load_trace_names(self) -> None:
        """The names of the trace's kernels (`TraceDetail.kernels`), for rows no sim reached."""
        if self.model.run is None:
            return
        try:
            detail = await self.services.client.trace(self.model.run.trace_id)
        except ApiError as exc:
            if exc.status == 404:
                return  # the trace was deleted since: its rows keep what the sims said
            raise
        self._trace_names = trace_kernel_names(detail.kernels)
        self.dirty = True
        self.draw()

    @work(exclusive=True, group="comparison", exit_on_error=False)
    async def load_comparison(self) -> None:
        """The real times, at most every COMPARISON_REFRESH_S while the run is active."""
        now = time.monotonic()
        if now - self._last_comparison < COMPARISON_REFRESH_S:
            return
        self._last_comparison = now
        result = await self.services.client.comparison(self.run_id)
        # The real timing's own name: a row whose real kernel has none names the sims' kernel in
        # both fields (and is not compared, here as on the server).
        self._real = [
            (None if row.sim_kernel_name == row.kernel_name else row.kernel_name, row.real_ns)
            for row in result.rows
        ]
        self.dirty = True
