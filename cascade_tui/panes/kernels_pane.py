"""The kernels pane: total simulated time per config and per-kernel bars, from the run model,
with real time (and MAPE) from the server's comparison when the trace has real timing."""

from __future__ import annotations

import time

from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from cascade_server.shared.comparison import RealTiming

from .. import chart, compare
from ..messages import ReportsWorkerErrors
from ..reducer import RunModel
from ..services import Services
from ..widgets.kernel_chart import KernelChart

COMPARISON_REFRESH_S = 5.0


class KernelsPane(ReportsWorkerErrors, Vertical):
    def __init__(self, run_id: str, model: RunModel, services: Services, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.run_id = run_id
        self.model = model
        self.services = services
        self.dirty = True  # kernels or sims changed since the chart was drawn
        self._real: RealTiming = ()  # the server's real timing, row by row
        self._last_comparison = 0.0
        self.order = "trace"  # compare.KERNEL_ORDERS: how the per-kernel bars are sorted

    def compose(self) -> ComposeResult:
        yield Static("", id="kernels-title")
        yield KernelChart(id="kernel-chart")

    def on_mount(self) -> None:
        self.refresh_title()

    def refresh_title(self) -> None:
        """`▶` while the chart has the keys (they scroll it), as the log pane's title does."""
        title = "kernels: simulated time per config and per kernel"
        if self.chart.has_focus:
            title = f"▶ {title} · Tab: sims"
        self.query_one("#kernels-title", Static).update(title)

    def next_order(self) -> str:
        orders = compare.KERNEL_ORDERS
        self.order = orders[(orders.index(self.order) + 1) % len(orders)]
        self.dirty = True  # drawn now if shown, else when it is
        self.draw()
        return self.order

    def on_resize(self) -> None:
        self.dirty = True  # the lines are built to the width
        self.call_after_refresh(self.draw)

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
        configs = compare.config_order((e.gpu_config for e in model.run.entries), model.sims.values())
        kernels = model.all_kernels()
        rows = compare.kernel_rows(configs, model.sims, kernels, self._real)
        totals = compare.config_totals(configs, model.sims, kernels)
        has_real = model.run.trace.has_real_timing
        widget.set_lines(
            chart.chart_lines(
                configs,
                rows,
                totals,
                compare.rank(totals),
                compare.mape(rows, configs),
                has_real,
                width,
                compare.stand_in_reason(model.summary(), model.sims.values()),
                finished=model.is_finished(),
                order=self.order,
            )
        )
        if has_real and not model.is_finished():
            self.load_comparison()

    @work(exclusive=True, group="comparison", exit_on_error=False)
    async def load_comparison(self) -> None:
        """The real times, at most every COMPARISON_REFRESH_S while the run is active."""
        now = time.monotonic()
        if now - self._last_comparison < COMPARISON_REFRESH_S:
            return
        self._last_comparison = now
        result = await self.services.client.comparison(self.run_id)
        self._real = [(row.kernel_name, row.real_ns) for row in result.rows]
        self.dirty = True
