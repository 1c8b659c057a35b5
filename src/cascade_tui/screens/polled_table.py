"""The lists' common screen: a table polled every 2 s while visible, updated cell by cell, with
the `/` filter and the `s`/`S` sort (`filter_sort`, pure).

These lists have no event stream (the server scans uploads every 2 s), so a poll worker fetches
the list and posts it; the handler changes only the cells whose text differs, keeps the cursor on
its row by key, and rebuilds only when rows come or go.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Header, Input, Static

from ..messages import ReportsWorkerErrors
from ..services import Services
from ..views.columns import ColumnSpec, fit
from ..views.filter_sort import next_column, shown
from ..views.formatting import ellipsize

POLL_SECONDS = 2.0

STATE_COLOURS = {
    "uploading": "cyan",
    "processing": "cyan",
    "ready": "green",
    "failed": "red bold",
    "active": "blue bold",
    "succeeded": "green",
    "partial": "yellow",
    "cancelled": "dim",
}

Cell = tuple[str, str]  # (text, style): what the diff compares


class ListTable(DataTable):
    """The lists' table: Home/End go to the first/last row (DataTable scrolls sideways with them,
    which a list that always fits its width never needs)."""

    BINDINGS = [
        Binding("home", "first_row", "First row", show=False, id="list.first"),
        Binding("end,G", "last_row", "Last row", show=False, id="list.last"),
        # vim keys (no list screen uses j or k for anything else)
        Binding("j", "cursor_down", "Down (vim)", show=False, id="list.down"),
        Binding("k", "cursor_up", "Up (vim)", show=False, id="list.up"),
    ]

    def action_first_row(self) -> None:
        self.move_cursor(row=0, animate=False)

    def action_last_row(self) -> None:
        self.move_cursor(row=max(0, self.row_count - 1), animate=False)


class FilterInput(Input):
    """The `/` filter under a list: narrows it as you type; Enter keeps it, Esc clears it."""

    BINDINGS = [Binding("escape", "clear", "Clear the filter", id="list.clear_filter")]

    class Cleared(Message):
        pass

    def action_clear(self) -> None:
        self.value = ""
        self.display = False
        self.post_message(self.Cleared())


class PolledTable(ReportsWorkerErrors, Screen):
    """A screen with one DataTable of items keyed by id, refreshed by polling; `/` filters it and
    `s`/`S` sort it (`filter_sort`, pure)."""

    BINDINGS = [
        Binding("slash", "filter", "Filter", id="list.filter"),
        # A filter kept with Enter is cleared by Esc on the list too (not only in its box).
        Binding("escape", "clear_filter", "Clear the filter", id="list.clear_kept_filter"),
        Binding("s", "sort", "Sort", show=False, id="list.sort"),
        Binding("S", "reverse_sort", "Reverse sort", show=False, id="list.reverse_sort"),
    ]

    COLUMNS: Sequence[ColumnSpec] = ()
    EMPTY = ""
    HEADING = "Cascade"

    class Fetched(Message):
        def __init__(self, items: list[Any]) -> None:
            super().__init__()
            self.items = items

    def __init__(self, services: Services) -> None:
        super().__init__()
        self.services = services
        self.items: dict[str, Any] = {}
        self._cells: dict[str, tuple[Cell, ...]] = {}
        self._widths: list[int | None] = []
        self._timer: Timer | None = None
        # The row to put the cursor on once it is listed (a run just opened or left).
        self.cursor_wanted: str | None = None
        self.fetched: list[Any] = []  # every item of the last poll, in the server's order
        self.query_text = ""  # the `/` filter
        self.sort_column: int | None = None  # None: the server's order (newest first)
        self.sort_reverse = False

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(self.EMPTY, id="list-empty")
        yield ListTable(cursor_type="row", zebra_stripes=True, id="list")
        yield Static("", id="list-detail")
        yield FilterInput(
            placeholder="filter: words of the id, trace, model, state or configs (Enter keeps, Esc clears)",
            id="list-filter",
        )
        yield Footer(compact=True)  # every key fits 80 columns, `? Help` included

    def on_mount(self) -> None:
        # Textual calls on_mount of every class in the MRO: subclasses must not define their own.
        self.title = self.HEADING
        self.query_one(FilterInput).display = False
        self._timer = self.set_interval(POLL_SECONDS, self.poll, pause=False)
        self.poll()

    def on_screen_suspend(self) -> None:
        if self._timer:
            self._timer.pause()

    def on_screen_resume(self) -> None:
        if self._timer:
            self._timer.resume()
        self.poll()

    def poll(self) -> None:
        self._fetch()

    @work(exclusive=True, group="poll", exit_on_error=False)
    async def _fetch(self) -> None:
        items = await self.fetch()
        self.post_message(self.Fetched(items))

    async def fetch(self) -> list[Any]:
        raise NotImplementedError

    def row_cells(self, item: Any, now: datetime) -> tuple[Cell, ...]:
        raise NotImplementedError

    @on(Fetched)
    def _apply(self, message: Fetched) -> None:
        self.fetched = message.items
        self.show_items()

    def search_text(self, item: Any) -> str:
        """What `/` searches in an item: its cells (subclasses add what the row leaves out)."""
        return " ".join(text for text, _ in self.row_cells(item, self.services.now()))

    def sort_value(self, item: Any, column: str) -> Any:
        """The value `s` sorts by in `column` (subclasses give numbers and times for theirs)."""
        cells = self.row_cells(item, self.services.now())
        return cells[[spec.title for spec in self.COLUMNS].index(column)][0].lower()

    def show_items(self) -> None:
        """The fetched items through the filter and the sort."""
        column = self.COLUMNS[self.sort_column].title if self.sort_column is not None else None
        self.apply_items(
            shown(
                self.fetched,
                self.query_text,
                self.search_text,
                (lambda item: self.sort_value(item, column)) if column else None,
                self.sort_reverse,
            )
        )
        self._update_title()

    def title_notes(self) -> list[str]:
        """What the title says after the heading, besides the filter and sort (subclasses)."""
        return []

    def _update_title(self) -> None:
        parts = [self.HEADING, *self.title_notes()]
        if self.query_text:
            parts.append(f"filter {self.query_text!r}: {len(self.items)} of {len(self.fetched)}")
        if self.sort_column is not None:
            arrow = "▼" if self.sort_reverse else "▲"
            parts.append(f"by {self.COLUMNS[self.sort_column].title}{arrow}")
        self.title = " · ".join(parts)

    def action_filter(self) -> None:
        box = self.query_one(FilterInput)
        box.display = True
        box.focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "clear_filter":
            return bool(self.query_text)  # no filter: no such key in the footer or `?`
        return True

    def action_clear_filter(self) -> None:
        self.query_one(FilterInput).action_clear()

    @on(Input.Changed, "#list-filter")
    def _filter_changed(self, message: Input.Changed) -> None:
        self.query_text = message.value.strip()
        self.show_items()
        self.refresh_bindings()

    @on(Input.Submitted, "#list-filter")
    def _filter_kept(self) -> None:
        self.query_one(FilterInput).display = bool(self.query_text)
        self.query_one(DataTable).focus()

    @on(FilterInput.Cleared)
    def _filter_cleared(self) -> None:
        self.query_text = ""
        self.show_items()
        self.refresh_bindings()
        self.query_one(DataTable).focus()

    def action_sort(self) -> None:
        self.sort_column = next_column(self.sort_column, len(self.COLUMNS))
        self.sort_reverse = False
        self.show_items()
        what = self.COLUMNS[self.sort_column].title if self.sort_column is not None else "newest first"
        self.notify(f"Sorted by {what}", timeout=2)

    def action_reverse_sort(self) -> None:
        self.sort_reverse = not self.sort_reverse
        self.show_items()

    def apply_items(self, items: list[Any]) -> None:
        table = self.query_one(DataTable)
        now = self.services.now()
        new = {item.id: item for item in items}
        cells = {item_id: self.row_cells(item, now) for item_id, item in new.items()}
        self.query_one("#list-empty").display = not new
        widths = self._fit(table, cells)
        if list(new) != list(self.items) or widths != self._widths:
            # Rows came, went or moved, or the columns changed: rebuild, keeping the cursor on
            # its row by key.
            current = self.selected_id()
            table.clear(columns=True)
            for spec, width in zip(self.COLUMNS, widths):
                if width is not None:
                    table.add_column(spec.title, width=width, key=spec.title)
            for item_id, row in cells.items():
                table.add_row(
                    *(Text(ellipsize(t, w), style=s) for (t, s), w in zip(row, widths) if w is not None),
                    key=item_id,
                )
            if current is not None and current in new:
                table.move_cursor(row=table.get_row_index(current), animate=False)
        else:
            with self.app.batch_update():
                for item_id, row in cells.items():
                    old = self._cells.get(item_id, ())
                    for i, cell in enumerate(row):
                        width = widths[i]
                        if width is not None and (i >= len(old) or old[i] != cell):
                            table.update_cell(
                                item_id, self.COLUMNS[i].title, Text(ellipsize(cell[0], width), style=cell[1])
                            )
        self.items = new
        self._cells = cells
        self._widths = widths
        if self.cursor_wanted is not None and self.cursor_wanted in new:
            table.move_cursor(row=table.get_row_index(self.cursor_wanted), animate=False)
            self.cursor_wanted = None
        self._show_detail()

    def select(self, item_id: str) -> None:
        """Put the cursor on `item_id`, now if it is listed, else when a poll brings it."""
        self.cursor_wanted = item_id
        if item_id in self.items:
            self.show_items()

    def _fit(self, table: DataTable, cells: dict[str, tuple[Cell, ...]]) -> list[int | None]:
        width = self.size.width or self.app.size.width  # the table spans the screen
        if len(cells) > max(0, table.size.height - 1):
            width -= 2  # the vertical scrollbar
        return fit(self.COLUMNS, [[text for text, _ in row] for row in cells.values()], width)

    def on_resize(self, _: events.Resize) -> None:
        if self.items:
            self.call_after_refresh(self.show_items)

    def detail_text(self, item: Any) -> str:
        """One or two lines about the highlighted item, shown whole under the table."""
        return ""

    def _show_detail(self) -> None:
        item = self.selected()
        self.query_one("#list-detail", Static).update(self.detail_text(item) if item else "")

    @on(DataTable.RowHighlighted)
    def _row_highlighted(self, _: DataTable.RowHighlighted) -> None:
        self._show_detail()

    def selected_id(self) -> str | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        try:
            return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        except Exception:  # noqa: BLE001 - an empty or shrinking table has no cursor row
            return None

    def selected(self) -> Any | None:
        item_id = self.selected_id()
        return self.items.get(item_id) if item_id else None
