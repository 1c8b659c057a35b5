"""The Traces screen: every trace, polled (`PolledTable`); delete one, start a run on it, compare
the traces of its sample set."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rich.markup import escape
from textual import on
from textual.binding import Binding
from textual.widgets import DataTable, Static

from cascade_core.arch_support import unsupported_arch_problem
from cascade_core.models import TraceSummary

from ..connection.client_errors import ApiError
from ..messages import DeleteTrace, OpenNewRun
from ..views.columns import ColumnSpec
from ..views.formatting import (
    age,
    human_bytes,
    plural,
    s3_problem,
    state_label,
)
from .compare_runs import CompareTracesScreen
from .modals import MessageScreen
from .polled_table import STATE_COLOURS, Cell, PolledTable


class TracesScreen(PolledTable):
    BINDINGS = [
        Binding("n", "new_run", "New run", id="traces.new_run"),
        Binding("enter", "open", "New run (a failed trace: its error)", show=False, id="traces.open"),
        Binding("g", "poll", "Refresh", show=False, id="traces.refresh"),
        Binding("r", "app.goto('runs')", "Runs", id="traces.runs"),
        Binding("D", "delete", "Delete trace", show=False, id="traces.delete"),
        Binding(
            "c", "compare_set", "Compare the traces of its sample set", show=False, id="traces.compare_set"
        ),
        Binding("y", "accuracy", "Accuracy", id="traces.accuracy"),
    ]
    # At 80 columns: trace, state, arch (it decides which configs can run the trace), the note
    # (a failed trace's error) and age come first; the model goes first when space is short.
    # The id is what tells traces apart (`tinyformer-step-sm70` / `-sm75`): never cut short.
    COLUMNS = (
        ColumnSpec("trace", 24, 40, 0),
        ColumnSpec("state", 12, 12, 0),
        ColumnSpec("model", 8, 24, 5),
        ColumnSpec("arch", 5, 6, 0),
        ColumnSpec("kernels", 7, 7, 3),
        ColumnSpec("size", 8, 9, 2),
        ColumnSpec("age", 5, 6, 1),
        ColumnSpec("note", 16, 0, 0),
    )
    HEADING = "Cascade · Traces"
    EMPTY = "No traces yet. Upload one with `cascade upload DIR` (see docs/guides/traces.md)."

    s3_problem: str | None = None  # the server's S3 endpoint failing (its health says why)
    # The trace archs the server's simulator can run (None: unknown, or the stand-in: any).
    simulator_archs: list[str] | None = None

    async def fetch(self) -> list[TraceSummary]:
        traces = await self.services.client.traces()
        self.s3_problem = s3_problem(await self.services.client.health())
        try:
            simulator = (await self.services.client.launcher()).simulator
        except ApiError:
            simulator = None  # an older server without the route: say nothing of archs
        self.simulator_archs = simulator.archs if simulator else None
        return traces

    def arch_problem(self, t: TraceSummary) -> str | None:
        """The straight answer for a ready trace the simulator cannot run (sm_90 on the pinned one)."""
        if t.state != "ready" or t.sample:
            return None
        return unsupported_arch_problem(t.trace_gpu_arch, self.simulator_archs)

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
        elif self.arch_problem(t):
            note = (f"{t.trace_gpu_arch}: this Accel-Sim cannot simulate it (a newer one can)", "yellow")
        elif t.state == "ready":
            note = (
                f"n: run on {t.suggested_sim_config}"
                if t.suggested_sim_config
                else "n: new run, pick its configs",
                "dim",
            )
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
        return " ".join(
            [
                super().search_text(t),
                t.state,
                t.model or "",
                t.source_gpu or "",
                t.suggested_sim_config or "",
                t.sample_set or "",
                t.error or "",
            ]
        )

    def sort_value(self, t: TraceSummary, column: str) -> Any:
        numbers = {
            "kernels": t.kernel_count,
            "size": t.bytes or 0,
            "age": -t.created_at.timestamp(),
        }  # youngest first, as ages read
        return numbers[column] if column in numbers else super().sort_value(t, column)

    def detail_text(self, t: TraceSummary) -> str:
        """A failed trace's error first and whole (the pane grows for it), then the rest."""
        layers = f" Layers: {', '.join(t.layers)}." if t.layers else ""
        sample_set = f" In sample set {t.sample_set} (c compares its traces)." if t.sample_set else ""
        timing = (
            " Real kernel times" + (" and steps" if t.has_step_timeline else "") + " (y: accuracy)."
            if t.has_real_timing
            else ""
        )
        head = (
            f"{t.id}: {t.state}, {plural(t.kernel_count, 'kernel')}, {human_bytes(t.bytes)}, "
            f"arch {t.trace_gpu_arch}, model {t.model or 'unknown'}, "
            f"traced on {t.source_gpu or 'an unknown GPU'}.{timing}{sample_set}{layers}"
        )
        s3 = f"[b red]{escape(self.s3_problem)}[/]\n" if self.s3_problem else ""
        if t.state == "failed":
            return f"{s3}[b red]{escape(t.error or 'failed, no reason given')}[/] [dim](Enter: all of it)[/]\n{escape(head)}"
        if problem := self.arch_problem(t):
            return f"{s3}[b yellow]{escape(problem)}[/]\n{escape(head)}"
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
            self.notify(
                "This trace belongs to no sample set (metadata.json's sample_set): "
                "nothing to compare it with.",
                severity="warning",
            )
            return
        self.app.push_screen(CompareTracesScreen(trace.sample_set, self.services))

    def action_accuracy(self) -> None:
        """`y`: simulated against real time, per trace with real timing and per variant."""
        from .accuracy import AccuracyScreen

        self.app.push_screen(AccuracyScreen(self.services))

    def action_open(self) -> None:
        """Enter: a new run on the trace, or a failed trace's whole error."""
        trace = self.selected()
        if trace is not None and trace.state == "failed":
            self.app.push_screen(
                MessageScreen(f"Trace {trace.id} failed", trace.error or "The server gave no reason.")
            )
            return
        self.action_new_run()

    @on(DataTable.RowSelected)
    def _row_selected(self, _: DataTable.RowSelected) -> None:
        self.action_open()
