"""Runs compared side by side (marked with `space` on the Runs list, opened with `c`)."""

from __future__ import annotations

import asyncio

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from ..messages import ReportsWorkerErrors
from ..runcompare import RunData, lines
from ..services import Services


class CompareRunsScreen(ReportsWorkerErrors, Screen):
    BINDINGS = [Binding("escape", "back", "Back", id="compare.back")]
    DEFAULT_CSS = """
    CompareRunsScreen VerticalScroll { height: 1fr; padding: 0 1; }
    CompareRunsScreen #compare-body { width: auto; }
    """
    ERROR_TITLES = {"compare": "Compare failed"}

    def __init__(self, run_ids: list[str], services: Services) -> None:
        super().__init__()
        self.run_ids = run_ids
        self.services = services
        self.text = ""

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll():
            yield Static(f"Loading {len(self.run_ids)} runs…", id="compare-body", markup=False)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.title = "Cascade · Compare " + " ".join(self.run_ids)
        self.query_one(VerticalScroll).focus()
        self._load()

    @work(exclusive=True, group="compare", exit_on_error=False)
    async def _load(self) -> None:
        client = self.services.client

        async def one(run_id: str) -> RunData:
            run, kernels = await asyncio.gather(client.run(run_id), client.kernels(run_id))
            return RunData(run, kernels)

        runs = await asyncio.gather(*(one(run_id) for run_id in self.run_ids))
        self.text = "\n".join(lines(runs))
        self.query_one("#compare-body", Static).update(self.text)

    def action_back(self) -> None:
        self.app.pop_screen()
