"""The step-timeline pane: per config the predicted step wall against the real one per step,
per-kind means, coverage and the error summary (`step_chart`), from the server's step timelines.
Sims send theirs as they succeed, so the pane fetches them again when another sim succeeded (at
most every TIMELINES_REFRESH_S)."""

from __future__ import annotations

import time

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical

from cascade_core.models import SimStepTimeline

from ..messages import ReportsWorkerErrors
from ..services import Services
from ..views import compare, step_chart
from ..views.reducer import RunModel
from ..widgets.kernel_chart import KernelChart

TIMELINES_REFRESH_S = 5.0


class StepsPane(ReportsWorkerErrors, Vertical):
    ERROR_TITLES = {"step-timelines": "Step timelines"}

    def __init__(self, run_id: str, model: RunModel, services: Services, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.run_id = run_id
        self.model = model
        self.services = services
        self.dirty = True  # sims changed since the pane was drawn
        self.timelines: list[SimStepTimeline] = []
        self._loaded = False
        self._last_load = 0.0
        self._succeeded = -1  # succeeded sims at the last fetch: a new one may have sent a timeline

    def compose(self) -> ComposeResult:
        yield KernelChart(id="step-chart")  # paints (text, style) lines, like the kernels view

    @property
    def chart(self) -> KernelChart:
        return self.query_one(KernelChart)

    @on(KernelChart.Resized)
    def _chart_resized(self, event: KernelChart.Resized) -> None:
        event.stop()
        self.dirty = True  # the lines are built to the chart's width
        self.draw()

    def draw(self) -> None:
        model = self.model
        width = self.chart.scrollable_content_region.width
        if model.run is None or width <= 0:
            return  # not laid out yet (hidden): drawn when shown, at its real width
        self.dirty = False
        configs = compare.config_order((e.variant for e in model.run.entries), model.sims.values())
        has_timeline = model.run.trace.has_step_timeline
        self.chart.set_lines(
            step_chart.step_lines(
                self.timelines,
                configs,
                max(40, width),
                has_step_timeline=has_timeline,
                stand_in=compare.stand_in_reason(model.summary(), model.sims.values()),
            )
        )
        succeeded = sum(sim.state == "succeeded" for sim in model.sims.values())
        if has_timeline and succeeded and (succeeded != self._succeeded or not self._loaded):
            self.load(succeeded)

    @work(exclusive=True, group="step-timelines", exit_on_error=False)
    async def load(self, succeeded: int) -> None:
        now = time.monotonic()
        if self._loaded and now - self._last_load < TIMELINES_REFRESH_S:
            self.dirty = True  # try again on a later tick
            return
        self._last_load = now
        self.timelines = await self.services.client.step_timelines(self.run_id)
        self._loaded = True
        self._succeeded = succeeded
        self.draw()
