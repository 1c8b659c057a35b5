"""The sweep chart of the kernels view: total simulated time against the swept value, a line per
config, the unmodified config's total as a flat line (textual-plotext). Drawn again at every
size, so its y axis always leaves the legend's rows (plotext writes the legend over the canvas's
top-left corner) free of points; the option is named in the title, nothing under the axis, where
notifications show."""

from __future__ import annotations

from textual.app import RenderResult
from textual_plotext import PlotextPlot

from ..views.sweep import SweepSeries, time_scale, y_limits

COLORS = ("cyan", "magenta", "green", "yellow", "blue", "red")
# The rows of the widget that are not the canvas: the title, the frame's two lines, tick labels.
FRAME_ROWS = 4


class SweepPlot(PlotextPlot):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.series: SweepSeries | None = None

    def show(self, series: SweepSeries) -> None:
        self.series = series
        self.refresh()

    def legend_rows(self) -> int:
        series = self.series
        if series is None:
            return 0
        return sum(bool(line.points) for line in series.lines) + sum(
            bool(line.baseline_ns) for line in series.lines
        )

    def render(self) -> RenderResult:
        self._draw()
        return super().render()

    def _draw(self) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        series = self.series
        if series is None:
            return
        divisor, unit = time_scale(series.max_ns)
        plt.title(f"total simulated time ({unit}) vs {series.option.lstrip('-')}")
        limits = y_limits(series, divisor, self.size.height - FRAME_ROWS, self.legend_rows())
        if limits is not None:
            plt.ylim(*limits)
        labelled = limits is not None  # no room for the legend and the points: the points win
        xs_all = [x for line in series.lines for x, _ in line.points]
        for i, line in enumerate(series.lines):
            name = line.gpu_config if len(series.lines) > 1 else "variants"
            if line.points:
                plt.plot(
                    [x for x, _ in line.points],
                    [ns / divisor for _, ns in line.points],
                    marker="dot",
                    color=COLORS[i % len(COLORS)],
                    label=name if labelled else None,
                )
            if line.baseline_ns and xs_all:
                low, high = min(xs_all), max(xs_all)
                plt.plot(
                    [low, high] if high > low else [low - 1, low + 1],
                    [line.baseline_ns / divisor] * 2,
                    color="gray",
                    label=f"{line.gpu_config} base" if labelled else None,
                )
