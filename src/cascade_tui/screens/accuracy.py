"""The Accuracy screen (`y` on the Traces list): per trace with real timing and per variant, how far
the simulator is from real hardware (`GET /api/accuracy`). The table of rows; for the selected
row, the log-log scatter of simulated against real time per kernel with the diagonal and ±50%
bands (Accel-Sim's correlator figure, drawn by textual-plotext), and its worst kernels by name."""

from __future__ import annotations

import math

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static
from textual_plotext import PlotextPlot

from cascade_core.accuracy import BAND
from cascade_core.models import AccuracyRow

from ..messages import ReportsWorkerErrors
from ..services import Services
from ..views.accuracy import ACCURACY_HELP, pct, r_text, signed_pct, table_layout, worst_lines
from ..views.formatting import plural


class AccuracyScreen(ReportsWorkerErrors, Screen):
    BINDINGS = [
        Binding("escape", "back", "Back", id="accuracy.back"),
        Binding("g", "reload", "Refresh", id="accuracy.refresh"),
    ]
    DEFAULT_CSS = """
    AccuracyScreen #accuracy-table { height: auto; max-height: 40%; }
    AccuracyScreen #accuracy-lower { height: 1fr; }
    AccuracyScreen #accuracy-plot { width: 1fr; min-width: 30; }
    AccuracyScreen #accuracy-side { width: 1fr; padding: 0 1; }
    AccuracyScreen #accuracy-note { height: auto; padding: 0 1; }
    """
    ERROR_TITLES = {"accuracy": "Accuracy failed"}

    def __init__(self, services: Services, trace: str | None = None) -> None:
        super().__init__()
        self.services = services
        self.trace = trace
        self.rows: list[AccuracyRow] = []
        self._laid_out: tuple[object, object] | None = None  # the table as last filled

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Loading accuracy…", id="accuracy-note", markup=False)
        yield DataTable(id="accuracy-table", cursor_type="row", zebra_stripes=True)
        with Horizontal(id="accuracy-lower"):
            yield PlotextPlot(id="accuracy-plot")
            with Vertical(id="accuracy-side"):
                yield Static("", id="accuracy-worst", markup=False)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.title = "Cascade · Accuracy" + (f" · {self.trace}" if self.trace else "")
        self.query_one(DataTable).focus()
        self._load()

    def help_sections(self) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
        """What `?` shows besides the keys: what the table's numbers mean."""
        return [("Accuracy columns", ACCURACY_HELP)]

    @work(exclusive=True, group="accuracy", exit_on_error=False)
    async def _load(self) -> None:
        self.rows = await self.services.client.accuracy(trace=self.trace, points=True)
        self._fill_table()
        # No rows: no empty chart frame either, only the note saying how rows come.
        self.query_one("#accuracy-lower").display = bool(self.rows)
        note = self.query_one("#accuracy-note", Static)
        if not self.rows:
            note.update(
                "No trace with real timing has finished real sims yet. `cascade timeline import` gives "
                "a trace real timing; runs of the real simulator on it then show here."
            )
        else:
            note.update(
                "Simulated against real kernel time, per trace and variant (replayed runs never count). "
                "MAPE: mean |error|; bias: mean signed error; r: correlation of log times (? explains)."
            )
        self._show(0 if self.rows else None)

    def on_resize(self) -> None:
        if self.rows:
            self._fill_table()  # its columns fit the width: never a table to scroll sideways

    def _fill_table(self) -> None:
        table = self.query_one(DataTable)
        # The table's own width, less its vertical scrollbar's when rows overflow it.
        width = max(20, self.size.width - 2)
        columns, cells = table_layout(self.rows, width)
        if (columns, cells) == self._laid_out:
            return
        self._laid_out = (columns, cells)
        cursor = table.cursor_row
        table.clear(columns=True)
        # Widths given, not measured: DataTable measures new rows when idle, and a frame drawn
        # before that keeps a header as narrow as its titles above the wider rows.
        for key, name, column_width in columns:
            table.add_column(name, key=key, width=column_width)
        for number, row in enumerate(cells):
            # Text, not str: a DataTable reads a str as markup, and a variant's label
            # (`SM7_QV100[gpgpu_n_clusters=4]`) would lose its options as a tag.
            table.add_row(*map(Text, row), key=str(number))
        if cells:
            table.move_cursor(row=min(cursor, len(cells) - 1))

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None and event.row_key.value is not None:
            self._show(int(event.row_key.value))

    def _show(self, index: int | None) -> None:
        plot = self.query_one(PlotextPlot)
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        worst = self.query_one("#accuracy-worst", Static)
        if index is None or index >= len(self.rows):
            worst.update("")
            plot.refresh()
            return
        row = self.rows[index]
        points = row.points or []
        xs = [math.log10(p.real_ns) for p in points if p.sim_ns > 0]
        ys = [math.log10(p.sim_ns) for p in points if p.sim_ns > 0]
        plt.title(f"{row.label}: simulated vs real (log10 ns)")
        # Both axes are log10 of nanoseconds (3 = 1 µs, 6 = 1 ms); plotext writes the two labels
        # on one line, so each says which axis it is.
        plt.xlabel("x: real, log10 ns")
        plt.ylabel("y: simulated, log10 ns")
        if xs:
            low, high = min(xs + ys), max(xs + ys)
            line = [low, high]
            plt.plot(line, line, color="green", label="equal")
            plt.plot(line, [v + math.log10(1 + BAND) for v in line], color="gray", label="±50%")
            plt.plot(line, [v + math.log10(1 - BAND) for v in line], color="gray")
            plt.scatter(xs, ys, marker="dot", color="cyan")
        plot.refresh()
        head = (
            f"{row.trace_id} on {row.label}: {row.kernels} kernels over {plural(row.sims, 'sim')}, "
            f"MAPE {pct(row.mape_pct)}, bias {signed_pct(row.mean_error_pct)}, r {r_text(row.pearson_r)}"
        )
        lines = [head, "", "Worst kernels:", *worst_lines(row)] if row.worst else [head]
        worst.update("\n".join(lines))

    def action_reload(self) -> None:
        self._load()

    def action_back(self) -> None:
        self.app.pop_screen()
