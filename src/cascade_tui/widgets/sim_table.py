"""The live sims table: a Line-API widget that repaints only the rows whose text changed.

Textual's DataTable re-renders every visible cell whenever any cell changes (see
reference/tui-anchors.md: ~11% CPU and ~24 KB/s at 1 Hz for 40 rows); this widget keeps a Strip
per row keyed by the row's fitted text, and the render timer calls `refresh_line` only for rows
whose text differs from what is on screen. Row data, layout and sorting live in `simrows` (pure).
The cursor follows its sim id, so it stays on the same sim when rows re-sort.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from cascade_core.models import SimSummary

from ..views import simrows
from ..views.simrows import Layout
from ..views.sweep import sim_names

# Style names from `simrows` -> colours that read in 16 and 256 colours alike.
CELL_STYLES: dict[str, Style] = {
    "state-pending": Style(dim=True),
    "state-launching": Style(color="cyan"),
    "state-running": Style(color="blue", bold=True),
    "state-lost": Style(color="yellow", bold=True),
    "state-succeeded": Style(color="green"),
    "state-failed": Style(color="red", bold=True),
    "state-cancelled": Style(dim=True),
    "error": Style(color="red"),
    "stale": Style(color="yellow"),
    "over": Style(color="yellow"),
    "queued": Style(dim=True),  # a scheduler's job id and word on it (Slurm: PENDING (Resources))
}


# What the sims table shows, in its column order (`?` on the run screen lists it under the keys,
# so an operator never has to guess what `beat` or `rate/s` is).
COLUMNS_HELP: tuple[tuple[str, str], ...] = (
    ("config", "the GPU config simulated, or its variant (so headed in a sweep)"),
    ("#", "the replica number of that config"),
    ("state", "pending, launching, running, succeeded, failed, cancelled or lost"),
    ("kernels", "kernels finished / kernels in the trace"),
    ("cycles", "simulated GPU cycles so far"),
    ("beat", "seconds since the sim's last heartbeat (yellow when stale; - once finished)"),
    ("IPC", "simulated instructions per cycle"),
    ("rate/s", "simulated instructions per second of real time (the simulator's speed)"),
    ("time", "how long the sim has run (until it finished); from about 95 columns"),
    ("ETA", "time to go at the rate it has finished kernels so far; from about 95 columns"),
    (
        "kernel",
        "the kernel being simulated; `last:` once the sim finished; or its error; for a sim "
        "a scheduler still holds, its job and what Slurm says (job 41_3 PENDING (Resources))",
    ),
)


class SimTable(ScrollView, can_focus=True):
    """Rows of sims; `update_rows()` is called by the screen's render timer, never per event."""

    BINDINGS = [
        Binding("up", "cursor(-1)", "Up", show=False, id="sims.up"),
        Binding("down", "cursor(1)", "Down", show=False, id="sims.down"),
        Binding("pageup", "cursor(-10)", "Page up", show=False, id="sims.page_up"),
        Binding("pagedown", "cursor(10)", "Page down", show=False, id="sims.page_down"),
        Binding("home", "cursor_to(0)", "First sim", show=False, id="sims.first"),
        Binding("G", "cursor_to(-1)", "Last sim", show=False, id="sims.last"),
        # j only: k is the kernels view on the run screen
        Binding("j", "cursor(1)", "Down (vim)", show=False, id="sims.down_vim"),
        # End belongs to the log pane below ("follow the log again"), not to table scrolling.
        Binding("end", "screen.follow", "Follow log", show=False, id="sims.follow_log"),
    ]
    COMPONENT_CLASSES = {"simtable--header", "simtable--cursor"}
    DEFAULT_CSS = """
    SimTable {
        height: 1fr;
        overflow-x: hidden;
        overflow-y: auto;
        & > .simtable--header { text-style: bold; background: $panel; }
        /* Reverse video reads as a cursor in 16 and 256 colours and with NO_COLOR (an accent
           background became bright red in 16 colours: a failure colour). Underlined when the
           keyboard is in the lower pane. */
        & > .simtable--cursor { text-style: underline; }
        &:focus > .simtable--cursor { text-style: reverse bold; }
    }
    """

    class Highlighted(Message):
        """The cursor moved to another sim."""

        def __init__(self, table: SimTable, sim_id: str | None) -> None:
            super().__init__()
            self.table = table
            self.sim_id = sim_id

        @property
        def control(self) -> SimTable:
            return self.table

    def __init__(self, *, now: Callable[[], datetime], id: str | None = None) -> None:
        super().__init__(id=id)
        self._now = now
        self.sims: dict[str, SimSummary] = {}
        self.order: list[str] = []
        self.cursor_id: str | None = None
        self.sort_key = "config"
        self.sort_reverse = False
        self.state_filter = "all"  # a name of simrows.STATE_FILTERS
        self._config_cells = 12
        self._sharded = False  # a sim is a shard: the table has the shard column
        self._variants = False  # a sim has simulator options: the config column names variants
        self._layout: Layout = simrows.layout(80, self._config_cells)
        self._rows: dict[str, tuple[tuple[str, str], ...]] = {}  # sim id -> fitted row texts
        self._strips: dict[tuple, Strip] = {}
        self._height_rows = 0
        self._names: dict[str, str] = {}  # label -> the config column's name for it
        self.repaints = 0  # rows repainted by update_rows (for tests and the benchmark)

    # --- data -------------------------------------------------------------------------------------

    def update_rows(
        self, sims: Mapping[str, SimSummary], changed: set[str] | None = None, reset: bool = False
    ) -> None:
        """Bring the table up to date. Recomputes the text of visible rows (cheap) and repaints a
        row only if its text changed; re-sorts, keeping the cursor on its sim."""
        now = self._now()
        self.sims = dict(sims)
        new_order = simrows.sorted_ids(
            self.sims.values(), self.sort_key, self.sort_reverse, now, self.state_filter
        )
        structural = reset or new_order != self.order
        self._names = sim_names(self.sims.values())
        variants = any(s.options for s in self.sims.values())
        config_cells = simrows.config_width(self._names.values(), variants)
        sharded = any(s.shard is not None for s in self.sims.values())
        if (config_cells, sharded, variants) != (self._config_cells, self._sharded, self._variants):
            self._config_cells, self._sharded, self._variants = config_cells, sharded, variants
            self._layout = simrows.layout(self.size.width or 80, config_cells, sharded, variants)
            structural = True
        self.order = new_order
        if self.cursor_id not in self.order:
            self._set_cursor(self.order[0] if self.order else None)
        self.virtual_size = Size(self.size.width, len(self.order) + 1)
        if self._height_rows != len(self.order) + 1:
            # Only the rows it has (the screen's CSS caps it): the pane below gets the rest.
            self._height_rows = len(self.order) + 1
            self.styles.height = self._height_rows
        if structural:
            self._rows.clear()
            self._strips.clear()
            self.refresh()
            self._scroll_cursor_into_view()
            return
        top = self.scroll_offset.y
        for index in range(top, min(len(self.order), top + max(0, self.size.height - 1))):
            sim_id = self.order[index]
            texts = self._row_texts(sim_id, now)
            if self._rows.get(sim_id) != texts:
                self._rows[sim_id] = texts
                self.refresh_line(index + 1)
                self.repaints += 1

    def _row_texts(self, sim_id: str, now: datetime) -> tuple[tuple[str, str], ...]:
        return simrows.row_texts(
            simrows.sim_cells(
                self.sims[sim_id], now, self._layout.bar_width, self._names.get(self.sims[sim_id].label)
            ),
            self._layout,
        )

    def set_state_filter(self, name: str) -> None:
        self.state_filter = name
        self.update_rows(self.sims, reset=True)

    def set_sort(self, key: str, reverse: bool) -> None:
        self.sort_key, self.sort_reverse = key, reverse
        self.update_rows(self.sims, reset=True)

    # --- cursor -------------------------------------------------------------------------------

    def _set_cursor(self, sim_id: str | None) -> None:
        if sim_id == self.cursor_id:
            return
        self.cursor_id = sim_id
        self.post_message(self.Highlighted(self, sim_id))

    @property
    def cursor_index(self) -> int | None:
        try:
            return self.order.index(self.cursor_id) if self.cursor_id else None
        except ValueError:
            return None

    def move_cursor_to(self, index: int) -> None:
        if not self.order:
            return
        old = self.cursor_index
        index = max(0, min(len(self.order) - 1, index))
        self._set_cursor(self.order[index])
        for i in {old, index}:
            if i is not None:
                self.refresh_line(i + 1)
        self._scroll_cursor_into_view()

    def action_cursor(self, delta: int) -> None:
        current = self.cursor_index
        self.move_cursor_to((current if current is not None else -1) + delta)

    def action_cursor_to(self, index: int) -> None:
        """Row `index`; negative counts from the end (-1: the last)."""
        self.move_cursor_to(index if index >= 0 else len(self.order) + index)

    def _scroll_cursor_into_view(self) -> None:
        index = self.cursor_index
        if index is None:
            return
        # Row i sits on virtual line i+1 (line 0 is the header, which never scrolls).
        visible = max(1, self.size.height - 1)
        top = self.scroll_offset.y
        if index < top:
            self.scroll_to(y=index, animate=False)
        elif index >= top + visible:
            self.scroll_to(y=index - visible + 1, animate=False)

    def on_click(self, event: events.Click) -> None:
        if event.y == 0:
            # Clicking a column title sorts by it (again: reverses).
            x = 0
            for col, width in zip(self._layout.columns, self._layout.widths):
                if x <= event.x < x + width + 1 and col.key in simrows.SORT_KEYS:
                    reverse = not self.sort_reverse if col.key == self.sort_key else False
                    self.set_sort(col.key, reverse)
                    return
                x += width + 1
            return
        self.move_cursor_to(self.scroll_offset.y + event.y - 1)

    # --- rendering ----------------------------------------------------------------------------

    def on_resize(self, event: events.Resize) -> None:
        self._layout = simrows.layout(event.size.width, self._config_cells, self._sharded, self._variants)
        self._rows.clear()
        self._strips.clear()
        self.virtual_size = Size(event.size.width, len(self.order) + 1)
        self.refresh()

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y == 0:
            style = self.get_component_rich_style("simtable--header")
            text = " ".join(simrows.header_texts(self._layout, self.sort_key, self.sort_reverse))
            return Strip([Segment(text, style)]).crop_extend(0, width, style)
        index = self.scroll_offset.y + y - 1
        if index >= len(self.order):
            if index == 0 and self.sims:  # the state filter hides every sim: say so
                note = simrows.no_match_text(self.state_filter)
                return Strip([Segment(note, self.rich_style + Style(dim=True))]).crop_extend(
                    0, width, self.rich_style
                )
            return Strip.blank(width, self.rich_style)
        sim_id = self.order[index]
        texts = self._rows.get(sim_id)
        if texts is None:
            texts = self._rows[sim_id] = self._row_texts(sim_id, self._now())
        selected = sim_id == self.cursor_id
        key = (texts, selected, width, self.has_focus)
        strip = self._strips.get(key)
        if strip is None:
            if len(self._strips) > 4096:
                self._strips.clear()
            strip = self._strips[key] = self._paint(texts, selected, width)
        return strip

    def _paint(self, texts: tuple[tuple[str, str], ...], selected: bool, width: int) -> Strip:
        base = self.rich_style
        if selected:
            base = base + self.get_component_rich_style("simtable--cursor")
        segments = []
        for i, (text, style_name) in enumerate(texts):
            if i:
                segments.append(Segment(" ", base))
            # The cursor row is one reversed colour: state colours inside it would turn into
            # coloured blocks (a red one reads as failure).
            style = base + CELL_STYLES[style_name] if style_name in CELL_STYLES and not selected else base
            segments.append(Segment(text, style))
        return Strip(segments).crop_extend(0, width, base)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        # Rows scrolled into view may not have been recomputed by the last tick: forget them.
        if round(old_value) != round(new_value):
            self._rows.clear()
        super().watch_scroll_y(old_value, new_value)

    def on_focus(self) -> None:
        self._strips.clear()
        self.refresh()

    def on_blur(self) -> None:
        self._strips.clear()
        self.refresh()
