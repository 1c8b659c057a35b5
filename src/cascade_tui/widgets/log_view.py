"""The log pane: a Line-API view over a bounded `LineStore` (hundreds of thousands of lines).

Only visible lines are rendered. It follows the tail; scrolling up pauses following and counts
new lines ("+N lines"); End resumes. Search matches are highlighted as lines are painted.
Lines are appended in batches by the screen's render timer, never one call per line.
"""

from __future__ import annotations

import re

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..views.loglines import LineStore, wrapped_window

MATCH_STYLE = Style(color="black", bgcolor="yellow")
CURRENT_MATCH_STYLE = Style(color="black", bgcolor="bright_yellow", bold=True)


class LogView(ScrollView, can_focus=True):
    # With ids, so `?` lists them while the log has focus (Tab from the sims table).
    BINDINGS = [
        Binding("up", "scroll_lines(-1)", "Log up a line", show=False, id="log.up"),
        Binding("down", "scroll_lines(1)", "Log down a line", show=False, id="log.down"),
        Binding("pageup", "scroll_pages(-1)", "Log page up", show=False, id="log.page_up"),
        Binding("pagedown", "scroll_pages(1)", "Log page down", show=False, id="log.page_down"),
        # Not in the footer: the log title says "(End to follow)" when paused, and the footer
        # must keep `q Quit` and `? Help` at 80 columns.
        Binding("end", "follow", "Follow", show=False, id="log.follow"),
        Binding("home", "top", "Top", show=False, id="log.top"),
    ]
    DEFAULT_CSS = """
    LogView {
        height: 1fr;
        background: $surface;
        overflow-x: auto;
        overflow-y: scroll;
        /* Left/Right scroll long lines sideways (`w` wraps them); a scrollbar row for that
           showed as a stray thumb on an otherwise empty line above the footer. */
        scrollbar-size-horizontal: 0;
    }
    """

    def __init__(self, max_lines: int = 200_000, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.store = LineStore(max_lines)
        self.following = True
        self.new_since_pause = 0  # lines appended while paused ("+N lines")
        self.pattern: re.Pattern[str] | None = None
        self.current_match: int | None = None  # absolute line number (dropped + index)
        self.match_position: tuple[int, int] | None = None  # (n, of) for "match 3 of 15"
        self._width = 0
        self._strips: dict[tuple, Strip] = {}
        self._scrolling_to_end = False
        self.wrap = False  # long lines wrap instead of scrolling sideways (`w`)

    # --- content ------------------------------------------------------------------------------

    def clear(self) -> None:
        self.store.clear()
        self._width = 0
        self._strips.clear()
        self.new_since_pause = 0
        self.current_match = None
        self.match_position = None
        self.following = True
        self.virtual_size = Size(0, 0)
        self.scroll_to(0, 0, animate=False, immediate=True)
        self.refresh()

    def append(self, lines: list[str]) -> None:
        if not lines:
            return
        dropped = self.store.extend(lines)
        self._width = max(self._width, max(len(line) for line in lines))
        if dropped:
            self._strips.clear()
        self.virtual_size = Size(0 if self.wrap else self._width, len(self.store))
        if self.following:
            self._to_end()
        else:
            self.new_since_pause += len(lines)
            if dropped:
                # Keep the same lines in view while paused, though older ones were dropped.
                self.scroll_to(y=max(0, self.scroll_y - dropped), animate=False, immediate=True)
            self.refresh()

    def _to_end(self) -> None:
        self._scrolling_to_end = True
        try:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        finally:
            self._scrolling_to_end = False
        self.refresh()
        # A horizontal scrollbar appearing (a long line) shrinks the viewport after layout:
        # go to the end again once the layout is settled.
        self.call_after_refresh(self._settle_at_end)

    def _settle_at_end(self) -> None:
        if self.following and self.scroll_y < self.max_scroll_y:
            self._scrolling_to_end = True
            try:
                self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True)
            finally:
                self._scrolling_to_end = False

    def on_resize(self) -> None:
        if self.following:
            self._settle_at_end()

    # --- following ----------------------------------------------------------------------------

    def action_follow(self) -> None:
        self.following = True
        self.new_since_pause = 0
        self._to_end()

    def action_scroll_lines(self, delta: int) -> None:
        # Not animated: following pauses (or resumes at the end) on the very key press.
        self.scroll_to(y=max(0, min(self.max_scroll_y, self.scroll_y + delta)), animate=False, immediate=True)

    def action_scroll_pages(self, pages: int) -> None:
        self.action_scroll_lines(pages * max(1, self.scrollable_content_region.height - 1))

    def action_top(self) -> None:
        self.following = False
        self.scroll_to(y=0, animate=False, immediate=True)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self._scrolling_to_end:
            return
        at_end = new_value >= self.max_scroll_y
        if at_end and not self.following:
            self.following = True
            self.new_since_pause = 0
        elif not at_end and new_value < old_value:
            self.following = False

    def status_text(self) -> str:
        """`following`, or `paused +N lines (End to follow)`."""
        if self.following:
            return "following"
        return f"paused +{self.new_since_pause:,} lines (End to follow)"

    # --- search -------------------------------------------------------------------------------

    def match_text(self) -> str:
        """`match 3 of 15` after a jump to a match, else ''."""
        if self.match_position is None:
            return ""
        n, total = self.match_position
        return f"match {n:,} of {total:,}"

    def set_search(self, pattern: re.Pattern[str] | None) -> None:
        self.pattern = pattern
        self.current_match = None
        self.match_position = None
        self._strips.clear()
        self.refresh()

    def find(self, backwards: bool = False) -> bool:
        """Jump to the next (or previous) match after the current one, or after the top line."""
        if self.pattern is None:
            return False
        dropped = self.store.dropped
        if self.current_match is not None and self.current_match >= dropped:
            start = self.current_match - dropped
        else:
            start = self.scroll_offset.y - (0 if backwards else 1)
        found = self.store.find(self.pattern, start, backwards=backwards)
        if found is None:
            return False
        self.current_match = dropped + found
        # Counted at each jump (not per frame): lines arriving later change it at the next one.
        self.match_position = (self.store.count(self.pattern, found), self.store.count(self.pattern))
        self.following = False
        self._strips.clear()
        self.scroll_to(y=max(0, found - self.size.height // 2), animate=False, immediate=True)
        self.refresh()
        return True

    # --- wrapping -----------------------------------------------------------------------------

    def set_wrap(self, wrap: bool) -> None:
        self.wrap = wrap
        self.styles.overflow_x = "hidden" if wrap else "auto"
        self.virtual_size = Size(0 if wrap else self._width, len(self.store))
        if wrap:
            self.scroll_to(x=0, animate=False, immediate=True)
        self._strips.clear()
        self.refresh()

    def _render_wrapped(self, y: int) -> Strip:
        width = self.size.width
        rows = wrapped_window(self.store.lines, self.scroll_offset.y, width, self.size.height, self.following)
        if y >= len(rows):
            return Strip.blank(width, self.rich_style)
        index, start = rows[y]
        absolute = self.store.dropped + index
        current = absolute == self.current_match
        key = ("wrap", absolute, start, width, current)
        strip = self._strips.get(key)
        if strip is None:
            if len(self._strips) > 2048:
                self._strips.clear()
            piece = self.store.lines[index][start : start + width]
            strip = self._strips[key] = self._paint(piece, 0, width, current)
        return strip

    # --- rendering ----------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        if self.wrap:
            return self._render_wrapped(y)
        width = self.size.width
        index = self.scroll_offset.y + y
        if index >= len(self.store):
            return Strip.blank(width, self.rich_style)
        absolute = self.store.dropped + index
        scroll_x = self.scroll_offset.x
        key = (absolute, scroll_x, width, absolute == self.current_match)
        strip = self._strips.get(key)
        if strip is None:
            if len(self._strips) > 2048:
                self._strips.clear()
            strip = self._strips[key] = self._paint(
                self.store.lines[index], scroll_x, width, absolute == self.current_match
            )
        return strip

    def _paint(self, line: str, scroll_x: int, width: int, current: bool) -> Strip:
        base = self.rich_style
        if self.pattern is None or not self.pattern.search(line):
            visible = line[scroll_x : scroll_x + width]
            return Strip([Segment(visible, base)]).crop_extend(0, width, base)
        text = Text(line, style=base, no_wrap=True, end="")
        text.highlight_regex(self.pattern, CURRENT_MATCH_STYLE if current else MATCH_STYLE)
        segments = list(text.render(self.app.console))
        return Strip(segments).crop_extend(scroll_x, scroll_x + width, base)
