"""Runs compared side by side (marked with `space` on the Runs list, opened with `c`), and the
traces of one sample set (`c` on the Traces list): one scrollable text of `runcompare` /
`tracecompare` lines, fitted to the width (again on resize) and scrolling sideways when a table
still does not fit."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import ScrollableContainer
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from ..messages import ReportsWorkerErrors
from ..services import Services
from ..views import tracecompare
from ..views.run_rows import stand_in_banner
from ..views.runcompare import RunData, lines, stand_in_reasons


class CompareRunsScreen(ReportsWorkerErrors, Screen):
    BINDINGS = [Binding("escape", "back", "Back", id="compare.back")]
    DEFAULT_CSS = """
    CompareRunsScreen #compare-scroll { height: 1fr; padding: 0 1; }
    CompareRunsScreen #compare-body { width: auto; }
    """
    ERROR_TITLES = {"compare": "Compare failed"}

    def __init__(self, run_ids: list[str], services: Services) -> None:
        super().__init__()
        self.run_ids = run_ids
        self.services = services
        self.text = ""
        self._lines_for: Callable[[int], list[str]] | None = None  # width -> lines, once loaded

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="stand-in", markup=False)  # as on the run screen
        with ScrollableContainer(id="compare-scroll"):  # the Footer is one too: by id
            yield Static(self.loading_text(), id="compare-body", markup=False)
        yield Footer(compact=True)

    def loading_text(self) -> str:
        return f"Loading {len(self.run_ids)} runs…"

    def heading(self) -> str:
        return "Cascade · Compare " + " ".join(self.run_ids)

    def on_mount(self) -> None:
        self.title = self.heading()
        self.query_one("#stand-in").display = False
        self.query_one("#compare-scroll", ScrollableContainer).focus()
        self._load()

    async def run_data(self, run_id: str) -> RunData:
        client = self.services.client
        run, kernels = await asyncio.gather(client.run(run_id), client.kernels(run_id))
        return RunData(run, kernels)

    async def build(self) -> Callable[[int], list[str]]:
        """Fetch what is compared; the lines for a width."""
        datas = await asyncio.gather(*(self.run_data(run_id) for run_id in self.run_ids))
        self.show_banner(stand_in_reasons(datas))
        return lambda width: lines(datas, width=width)

    def show_banner(self, reasons: dict[str, str]) -> None:
        """The run screen's stand-in banner, naming the runs it applies to when not all."""
        if not reasons:
            return
        whose = "" if len(reasons) == len(self.run_ids) else ", ".join(reasons)
        texts = dict.fromkeys(stand_in_banner(reason, whose) for reason in reasons.values())
        banner = self.query_one("#stand-in", Static)
        banner.update("\n".join(texts))
        banner.display = True

    @work(exclusive=True, group="compare", exit_on_error=False)
    async def _load(self) -> None:
        self._lines_for = await self.build()
        self._draw()

    def _draw(self) -> None:
        if self._lines_for is None:
            return
        # The padding and a vertical scrollbar's cells are not the text's.
        width = max(40, self.query_one("#compare-scroll", ScrollableContainer).size.width - 3)
        self.text = "\n".join(self._lines_for(width))
        self.query_one("#compare-body", Static).update(self.text)

    def on_resize(self, event: events.Resize) -> None:
        self._draw()

    def action_back(self) -> None:
        self.app.pop_screen()


class CompareTracesScreen(CompareRunsScreen):
    """The traces of one sample set (sm70 against sm75), each by its newest run with succeeded
    sims (`tracecompare`)."""

    def __init__(self, sample_set: str, services: Services) -> None:
        super().__init__([], services)
        self.sample_set = sample_set

    def loading_text(self) -> str:
        return f"Loading the traces of sample set {self.sample_set!r}…"

    def heading(self) -> str:
        return f"Cascade · Compare sample set {self.sample_set}"

    async def build(self) -> Callable[[int], list[str]]:
        client = self.services.client
        traces, runs = await asyncio.gather(client.traces(), client.runs())
        members = tracecompare.set_members(traces, self.sample_set)
        chosen = tracecompare.newest_runs_with_successes([t.id for t in members], runs)
        datas = await asyncio.gather(*(self.run_data(chosen[t.id]) for t in members if t.id in chosen))
        self.run_ids = [data.run.id for data in datas]
        self.show_banner(stand_in_reasons(datas))
        by_trace = {data.run.trace_id: data for data in datas}
        pairs = [tracecompare.TraceRun(t, by_trace.get(t.id)) for t in members]
        return lambda width: tracecompare.lines(self.sample_set, pairs, width=width)
