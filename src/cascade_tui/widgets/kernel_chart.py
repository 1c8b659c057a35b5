"""The kernels view: paints the (text, style) lines `chart.chart_lines` builds, one per row.

Line API, so only visible rows are painted; the screen sets new lines at most once per render tick
and only when kernels or sims changed.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..views.chart import Line

# Config colours from the 16-colour palette, so bars read the same in 256 colours and in tmux.
CHART_STYLES: dict[str, Style] = {
    "title": Style(bold=True),
    "name": Style(bold=True),
    "dim": Style(dim=True),
    "warn": Style(color="yellow", bold=True),
    "best": Style(color="green", bold=True),
    "real": Style(color="white"),
    "cfg0": Style(color="cyan"),
    "cfg1": Style(color="magenta"),
    "cfg2": Style(color="green"),
    "cfg3": Style(color="yellow"),
    "cfg4": Style(color="blue"),
    "cfg5": Style(color="red"),
}


class KernelChart(ScrollView, can_focus=True):
    """Lines are built to the pane's width (`chart.chart_lines`), so it never scrolls sideways;
    the vertical scrollbar is always there, so the width does not change when lines grow."""

    DEFAULT_CSS = """
    KernelChart { height: 1fr; background: $surface; overflow-x: hidden; overflow-y: scroll; }
    """

    class Resized(Message):
        """The chart's width changed, so its lines (built to the old width) must be built again.

        The chart's own resize, not its pane's: a pane whose layout changes inside it (the sweep
        chart moving beside the bars) keeps its size while the chart narrows."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines: list[Line] = []
        self._width = 0
        self._at_end = False  # scrolled to the last line (and there is more than a screen)

    def on_resize(self, event: events.Resize) -> None:
        self._keep_at_end()
        if event.size.width != self._width:
            self._width = event.size.width
            self.post_message(self.Resized())

    def set_lines(self, lines: list[Line]) -> None:
        if lines == self.lines:
            return
        self.lines = lines
        width = max((sum(len(t) for t, _ in line) for line in lines), default=0)
        self.virtual_size = Size(width, len(lines))
        self.refresh()
        self._keep_at_end()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._at_end = self.max_scroll_y > 0 and round(new_value) >= self.max_scroll_y

    def _keep_at_end(self) -> None:
        """Read at the end, the view stays at the end when its lines or its height change (a
        resize builds the lines again, to another width and count)."""
        if self._at_end:
            self.call_after_refresh(self.scroll_end, animate=False)

    def plain_text(self) -> str:
        return "\n".join("".join(t for t, _ in line).rstrip() for line in self.lines)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        index = self.scroll_offset.y + y
        base = self.rich_style
        if index >= len(self.lines):
            return Strip.blank(width, base)
        segments = [
            Segment(text, base + CHART_STYLES[style] if style in CHART_STYLES else base)
            for text, style in self.lines[index]
        ]
        scroll_x = self.scroll_offset.x
        return Strip(segments).crop_extend(scroll_x, scroll_x + width, base)
