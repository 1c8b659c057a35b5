"""The Runs screen: every run, polled (`PolledTable`); open, compare, cancel, re-run, retry or
delete one."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rich.markup import escape
from textual import on
from textual.binding import Binding
from textual.widgets import DataTable

from cascade_core.models import RunSummary
from cascade_core.run_actions import refusal, unfinished_sims

from ..messages import ConfirmCancel, ManageRun, OpenNewRun, OpenRun
from ..services import Services
from ..views.columns import ColumnSpec
from ..views.compare import SAMPLE_RUN_NOTE
from ..views.formatting import (
    age,
    progress_fraction,
    run_seconds,
    state_label,
)
from ..views.run_rows import entries_label, run_mark, run_progress, run_time, run_took_text, sims_count_text
from ..views.script_views import entries_text
from .compare_runs import CompareRunsScreen
from .polled_table import STATE_COLOURS, Cell, PolledTable


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
    # `age` and `configs` (as `cascade runs` writes them) come when there is room.
    COLUMNS = (
        ColumnSpec("run", 17, 17, 0),
        ColumnSpec("trace", 20, 40, 0),
        ColumnSpec("state", 9, 12, 0),
        ColumnSpec("ok", 5, 7, 1),
        ColumnSpec("time", 5, 6, 1),
        ColumnSpec("age", 5, 6, 3),
        ColumnSpec("configs", 20, 40, 4),
        ColumnSpec("sims", 10, 0, 1),
    )
    HEADING = "Cascade · Runs"
    EMPTY = "No runs yet. Press t for traces, then n on a ready trace to start one."

    def __init__(self, services: Services) -> None:
        super().__init__(services)
        self.marked: set[str] = set()  # runs marked for comparison
        self._could_cancel: bool | None = True  # as the footer was composed (x offered)

    async def fetch(self) -> list[RunSummary]:
        return await self.services.client.runs()

    def row_cells(self, r: RunSummary, now: datetime) -> tuple[Cell, ...]:
        # The sample/stand-in mark starts the last column, which is cut at its end only: at 80
        # columns the trace id takes what its column has (and this one keeps 10 cells).
        tag = f"{mark}: " if (mark := run_mark(r)) else ""
        marked = r.id in self.marked
        return (
            (("+" if marked else " ") + r.id, "bold reverse" if marked else "bold"),
            (r.trace_id, ""),
            (state_label(r.state), STATE_COLOURS.get(r.state, "")),
            (run_progress(r.sim_counts), ""),
            (run_time(r, now), "" if r.state != "active" else "italic"),
            (age(r.created_at, now), ""),
            (entries_text(r.entries), ""),
            (tag + sims_count_text(r.sim_counts), "yellow" if tag else ""),
        )

    def search_text(self, r: RunSummary) -> str:
        configs = " ".join(e.variant for e in r.entries)
        return " ".join([super().search_text(r), r.state, configs])

    def sort_value(self, r: RunSummary, column: str) -> Any:
        total = sum(r.sim_counts.values())
        finished = r.finished_at if r.state != "active" else None
        numbers = {
            "ok": progress_fraction(r.sim_counts.get("succeeded", 0), total),
            "time": run_seconds(r.created_at, finished, self.services.now()),
            "age": -r.created_at.timestamp(),
            "sims": unfinished_sims(r),
        }
        return numbers[column] if column in numbers else super().sort_value(r, column)

    def detail_text(self, r: RunSummary) -> str:
        entries = entries_label(r.entries)
        note = ""
        if r.sample:
            note = f"\n[yellow]{SAMPLE_RUN_NOTE}[/]"
        elif r.replay:
            note = "\n[yellow]Stand-in numbers: the sims replay a recorded Accel-Sim log, not this trace.[/]"
        timing = run_took_text(r, self.services.now())
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
            return run is not None and refusal("cancel", run) is None
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
