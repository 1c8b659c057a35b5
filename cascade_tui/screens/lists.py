"""The Traces and Runs screens: tables polled every 2 s while visible, updated cell by cell.

These lists have no event stream (the server scans uploads every 2 s), so a poll worker fetches
the list and posts it; the handler changes only the cells whose text differs, keeps the cursor on
its row by key, and rebuilds only when rows come or go.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from rich.markup import escape
from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Header, Input, Static

from cascade_server.shared.models import TERMINAL_SIM_STATES, RunSummary, SimState, TraceSummary

from ..columns import ColumnSpec, fit
from ..formatting import (
    STATE_DISPLAY_ORDER,
    age,
    human_bytes,
    human_duration,
    plural,
    progress_fraction,
    run_seconds,
    run_took,
    s3_problem,
    state_label,
)
from ..listview import next_column, shown
from ..messages import ConfirmCancel, DeleteTrace, ManageRun, OpenNewRun, OpenRun, ReportsWorkerErrors
from ..services import Services
from .compare_runs import CompareRunsScreen, CompareTracesScreen
from .modals import MessageScreen

POLL_SECONDS = 2.0

STATE_COLOURS = {
    "uploading": "cyan", "processing": "cyan", "ready": "green", "failed": "red bold",
    "active": "blue bold", "succeeded": "green", "partial": "yellow", "cancelled": "dim",
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
    `s`/`S` sort it (`listview`, pure)."""

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
        yield FilterInput(placeholder="filter: words of the id, trace, model, state or configs "
                          "(Enter keeps, Esc clears)", id="list-filter")
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
        self.apply_items(shown(
            self.fetched, self.query_text, self.search_text,
            (lambda item: self.sort_value(item, column)) if column else None, self.sort_reverse))
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
                table.add_row(*(Text(t, style=s) for (t, s), w in zip(row, widths) if w is not None),
                              key=item_id)
            if current is not None and current in new:
                table.move_cursor(row=table.get_row_index(current), animate=False)
        else:
            with self.app.batch_update():
                for item_id, row in cells.items():
                    old = self._cells.get(item_id, ())
                    for i, cell in enumerate(row):
                        if widths[i] is not None and (i >= len(old) or old[i] != cell):
                            table.update_cell(item_id, self.COLUMNS[i].title,
                                              Text(cell[0], style=cell[1]))
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


class TracesScreen(PolledTable):
    BINDINGS = [
        Binding("n", "new_run", "New run", id="traces.new_run"),
        Binding("enter", "open", "New run (a failed trace: its error)", show=False,
                id="traces.open"),
        Binding("g", "poll", "Refresh", show=False, id="traces.refresh"),
        Binding("r", "app.goto('runs')", "Runs", id="traces.runs"),
        Binding("D", "delete", "Delete trace", show=False, id="traces.delete"),
        Binding("c", "compare_set", "Compare the traces of its sample set", show=False,
                id="traces.compare_set"),
    ]
    # At 80 columns: trace, state, arch (it decides which configs can run the trace), the note
    # (a failed trace's error) and age come first; the model goes first when space is short.
    # The id is what tells traces apart (`tinyformer-step-sm70` / `-sm75`): never cut short.
    COLUMNS = (ColumnSpec("trace", 24, 40, 0), ColumnSpec("state", 12, 12, 0),
               ColumnSpec("model", 8, 24, 5), ColumnSpec("arch", 5, 6, 0),
               ColumnSpec("kernels", 7, 7, 3), ColumnSpec("size", 8, 9, 2),
               ColumnSpec("age", 5, 6, 1), ColumnSpec("note", 16, 0, 0))
    HEADING = "Cascade · Traces"
    EMPTY = "No traces yet. Upload one with `cascade upload DIR` (see docs/guides/traces.md)."

    s3_problem: str | None = None  # the server's S3 endpoint failing (its health says why)

    async def fetch(self) -> list[TraceSummary]:
        traces = await self.services.client.traces()
        self.s3_problem = s3_problem(await self.services.client.health())
        return traces

    def title_notes(self) -> list[str]:
        return ["⚠ S3 endpoint failing"] if self.s3_problem else []

    def show_items(self) -> None:
        super().show_items()
        empty = self.query_one("#list-empty", Static)
        empty.update(f"{self.EMPTY}\n{self.s3_problem}" if self.s3_problem else self.EMPTY)

    def row_cells(self, t: TraceSummary, now: datetime) -> tuple[Cell, ...]:
        if t.state == "failed":
            note: Cell = (t.error or "failed", "red")
        elif t.sample:
            # Short, so a narrow note column keeps it whole (the line under the table says more).
            note = ("sample: no instruction traces to run", "dim")
        elif t.state == "ready":
            note = (f"n: run on {t.suggested_sim_config}" if t.suggested_sim_config
                    else "n: new run", "dim")
        else:
            note = ("upload in progress" if t.state == "uploading" else "post-processing", "cyan")
        return (
            (t.id, "bold"),
            (state_label(t.state), STATE_COLOURS.get(t.state, "")),
            (t.model or "-", ""),
            (t.trace_gpu_arch, ""),
            (str(t.kernel_count), ""),
            (human_bytes(t.bytes), ""),
            (age(t.created_at, now), ""),
            note,
        )

    def search_text(self, t: TraceSummary) -> str:
        return " ".join([super().search_text(t), t.state, t.model or "", t.source_gpu or "",
                         t.suggested_sim_config or "", t.sample_set or "", t.error or ""])

    def sort_value(self, t: TraceSummary, column: str) -> Any:
        numbers = {"kernels": t.kernel_count, "size": t.bytes or 0,
                   "age": -t.created_at.timestamp()}  # youngest first, as ages read
        return numbers[column] if column in numbers else super().sort_value(t, column)

    def detail_text(self, t: TraceSummary) -> str:
        """A failed trace's error first and whole (the pane grows for it), then the rest."""
        layers = f" Layers: {', '.join(t.layers)}." if t.layers else ""
        sample_set = f" In sample set {t.sample_set} (c compares its traces)." if t.sample_set else ""
        head = (f"{t.id}: {t.state}, {plural(t.kernel_count, 'kernel')}, {human_bytes(t.bytes)}, "
                f"arch {t.trace_gpu_arch}, model {t.model or 'unknown'}, "
                f"traced on {t.source_gpu or 'an unknown GPU'}.{sample_set}{layers}")
        s3 = f"[b red]{escape(self.s3_problem)}[/]\n" if self.s3_problem else ""
        if t.state == "failed":
            return f"{s3}[b red]{escape(t.error or 'failed, no reason given')}[/] [dim](Enter: all of it)[/]\n{escape(head)}"
        note = self.row_cells(t, self.services.now())[-1][0]
        return f"{s3}{escape(note)}\n{escape(head)}"

    def action_poll(self) -> None:
        self.poll()

    def action_delete(self) -> None:
        trace = self.selected()
        if trace is not None:
            self.post_message(DeleteTrace(trace))

    def action_new_run(self) -> None:
        trace = self.selected()
        if trace is None:
            self.notify("No trace selected.", severity="warning")
            return
        self.post_message(OpenNewRun(trace))

    def action_compare_set(self) -> None:
        """`c`: the traces of the highlighted trace's sample set, side by side."""
        trace = self.selected()
        if trace is None or not trace.sample_set:
            self.notify("This trace belongs to no sample set (metadata.json's sample_set): "
                        "nothing to compare it with.", severity="warning")
            return
        self.app.push_screen(CompareTracesScreen(trace.sample_set, self.services))

    def action_open(self) -> None:
        """Enter: a new run on the trace, or a failed trace's whole error."""
        trace = self.selected()
        if trace is not None and trace.state == "failed":
            self.app.push_screen(MessageScreen(f"Trace {trace.id} failed",
                                               trace.error or "The server gave no reason."))
            return
        self.action_new_run()

    @on(DataTable.RowSelected)
    def _row_selected(self, _: DataTable.RowSelected) -> None:
        self.action_open()


def sims_count_text(counts: Mapping[SimState, int]) -> str:
    """The sims not (yet) succeeded, live work and problems first; succeeded ones are counted in
    the `succeeded` column, so they are named here only when nothing else is left."""
    parts = [f"{counts[s]} {s}" for s in STATE_DISPLAY_ORDER if s != "succeeded" and counts.get(s)]
    return ", ".join(parts) or (f"{counts['succeeded']} succeeded" if counts.get("succeeded") else "")


def unfinished_sims(run: RunSummary) -> int:
    return sum(n for state, n in run.sim_counts.items() if state not in TERMINAL_SIM_STATES)


def run_progress(counts: Mapping[SimState, int]) -> str:
    """Succeeded sims out of all: a cancelled or failed run never looks complete. (No bar: at
    80 columns the run's duration needs the room more, and `sims` names what is not done.)"""
    return f"{counts.get('succeeded', 0)}/{sum(counts.values())}"


def run_time(r: RunSummary, now: datetime) -> str:
    """The `time` column: how long a finished run took, or an active one has run so far."""
    return human_duration(run_seconds(r.created_at, r.finished_at if r.state != "active" else None, now))


class RunsScreen(PolledTable):
    BINDINGS = [
        Binding("enter", "open_run", "Open", id="runs.open"),
        Binding("n", "new_run", "New run", id="runs.new_run"),
        Binding("x", "cancel_run", "Cancel run", id="runs.cancel"),
        Binding("g", "poll", "Refresh", show=False, id="runs.refresh"),
        Binding("t", "app.goto('traces')", "Traces", id="runs.traces"),
        Binding("space", "mark", "Mark for compare", show=False, id="runs.mark"),
        Binding("c", "compare", "Compare marked", show=False, id="runs.compare"),
        Binding("R", "manage('rerun')", "Re-run", show=False, id="runs.rerun"),
        Binding("Y", "manage('retry')", "Retry failed sims", show=False, id="runs.retry"),
        Binding("D", "manage('delete')", "Delete run", show=False, id="runs.delete"),
    ]
    # The run column has room for the compare mark ("+run-…"). At 80 columns run, trace, state,
    # `ok` (succeeded of all), `time` (took, or so far) and `sims` fit, also beside a scrollbar;
    # `age` comes from about 90.
    COLUMNS = (ColumnSpec("run", 17, 17, 0), ColumnSpec("trace", 20, 40, 0),
               ColumnSpec("state", 9, 12, 0), ColumnSpec("ok", 5, 7, 1),
               ColumnSpec("time", 5, 6, 1), ColumnSpec("age", 5, 6, 3), ColumnSpec("sims", 10, 0, 1))
    HEADING = "Cascade · Runs"
    EMPTY = "No runs yet. Press t for traces, then n on a ready trace to start one."

    def __init__(self, services: Services) -> None:
        super().__init__(services)
        self.marked: set[str] = set()  # runs marked for comparison
        self._could_cancel: bool | None = True  # as the footer was composed (x offered)

    async def fetch(self) -> list[RunSummary]:
        return await self.services.client.runs()

    def row_cells(self, r: RunSummary, now: datetime) -> tuple[Cell, ...]:
        # The sample/replay marker starts the last column, which is cut at its end only: at 80
        # columns the trace id takes what its column has.
        tag = "sample · " if r.sample else ("replay · " if r.replay else "")
        marked = r.id in self.marked
        return (
            (("+" if marked else " ") + r.id, "bold reverse" if marked else "bold"),
            (r.trace_id, ""),
            (state_label(r.state), STATE_COLOURS.get(r.state, "")),
            (run_progress(r.sim_counts), ""),
            (run_time(r, now), "" if r.state != "active" else "italic"),
            (age(r.created_at, now), ""),
            (tag + sims_count_text(r.sim_counts), "yellow" if tag else ""),
        )

    def search_text(self, r: RunSummary) -> str:
        configs = " ".join(e.gpu_config for e in r.entries)
        return " ".join([super().search_text(r), r.state, configs])

    def sort_value(self, r: RunSummary, column: str) -> Any:
        total = sum(r.sim_counts.values())
        finished = r.finished_at if r.state != "active" else None
        numbers = {"ok": progress_fraction(r.sim_counts.get("succeeded", 0), total),
                   "time": run_seconds(r.created_at, finished, self.services.now()),
                   "age": -r.created_at.timestamp(), "sims": unfinished_sims(r)}
        return numbers[column] if column in numbers else super().sort_value(r, column)

    def detail_text(self, r: RunSummary) -> str:
        entries = ", ".join(f"{e.gpu_config} × {e.count}" for e in r.entries)
        note = ""
        if r.sample:
            note = "\n[yellow]sample run: results recorded elsewhere, replayed here[/]"
        elif r.replay:
            note = "\n[yellow]Stand-in numbers: the sims replay a recorded Accel-Sim log, not this trace.[/]"
        now = self.services.now()
        finished = r.finished_at if r.state != "active" else None
        timing = run_took(r.created_at, finished, now)
        if r.started_at is None and finished is None:
            timing += ", no sim started yet"  # waiting for a slot, the cluster or a person
        return f"{r.id} ({timing}) on {escape(r.trace_id)}: {escape(entries)}{note}"

    def action_poll(self) -> None:
        self.poll()

    def action_open_run(self) -> None:
        run = self.selected()
        if run is not None:
            self.post_message(OpenRun(run.id))

    @on(DataTable.RowSelected)
    def _row_selected(self, _: DataTable.RowSelected) -> None:
        self.action_open_run()

    def action_new_run(self) -> None:
        self.post_message(OpenNewRun(None))

    def action_mark(self) -> None:
        run = self.selected()
        if run is None:
            return
        self.marked ^= {run.id}
        self.show_items()
        self.query_one(DataTable).action_cursor_down()

    def action_compare(self) -> None:
        marked = [run_id for run_id in self.fetched_ids() if run_id in self.marked]
        if len(marked) < 2:
            self.notify("Mark two or more runs with space, then press c.", severity="warning")
            return
        self.app.push_screen(CompareRunsScreen(list(reversed(marked)), self.services))  # oldest first

    def fetched_ids(self) -> list[str]:
        return [item.id for item in self.fetched]

    def action_manage(self, action: str) -> None:
        run = self.selected()
        if run is not None:
            self.post_message(ManageRun(action, run))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_run":
            run = self.selected()  # a finished run has nothing to cancel: no such key offered
            return run is not None and run.state == "active"
        return super().check_action(action, parameters)

    def _show_detail(self) -> None:
        super()._show_detail()
        # The footer is rebuilt only when what it offers changes (it runs on every poll).
        can_cancel = self.check_action("cancel_run", ())
        if can_cancel != self._could_cancel:
            self._could_cancel = can_cancel
            self.refresh_bindings()

    def action_cancel_run(self) -> None:
        run = self.selected()
        if run is None:
            return
        self.post_message(ConfirmCancel(run.id, unfinished=unfinished_sims(run)))
