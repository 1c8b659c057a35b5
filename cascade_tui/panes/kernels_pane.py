"""The kernels pane: total simulated time per config and per-kernel bars, from the run model,
with real time (and MAPE) from the server's comparison when the trace has real timing."""

from __future__ import annotations

import time

from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical

from cascade_server.comparison import RealTiming

from .. import chart, compare
from ..messages import ReportsWorkerErrors
from ..reducer import RunModel
from ..services import Services
from ..widgets.kernel_chart import KernelChart

COMPARISON_REFRESH_S = 5.0


class KernelsPane(ReportsWorkerErrors, Vertical):
    def __init__(self, run_id: str, model: RunModel, services: Services, *,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.run_id = run_id
        self.model = model
        self.services = services
        self.dirty = True  # kernels or sims changed since the chart was drawn
        self._real: RealTiming = ()  # the server's real timing, row by row
        self._last_comparison = 0.0

    def compose(self) -> ComposeResult:
        yield KernelChart(id="kernel-chart")

    @property
    def chart(self) -> KernelChart:
        return self.query_one(KernelChart)

    def draw(self) -> None:
        model = self.model
        self.dirty = False
        if model.run is None:
            return
        configs = compare.config_order((e.gpu_config for e in model.run.entries),
                                       model.sims.values())
        kernels = model.all_kernels()
        rows = compare.kernel_rows(configs, model.sims, kernels, self._real)
        totals = compare.config_totals(configs, model.sims, kernels)
        has_real = model.run.trace.has_real_timing
        widget = self.chart
        widget.set_lines(chart.chart_lines(
            configs, rows, totals, compare.rank(totals), compare.mape(rows, configs), has_real,
            max(60, widget.size.width), compare.stand_in_reason(model.summary(), model.sims.values()),
            finished=model.is_finished(),
        ))
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
