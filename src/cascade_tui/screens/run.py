"""One run, live: header, sims table, and a lower pane switching between the selected sim's log,
the kernels comparison, files/downloads and the step timeline (each pane a widget owning its
state, `panes/`).

Data flow: one SSE worker applies events to a `RunModel` (pure) as they arrive; a render timer
(1-4 Hz) takes the accumulated changes and hands them to the widgets (changed rows only). Nothing
touches a widget once per event.
"""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import ContentSwitcher, Footer, Header, Static

from cascade_core.models import TERMINAL_SIM_STATES

from ..messages import ConfirmCancel, ManageRun, ReportsWorkerErrors
from ..panes.files_pane import FilesPane
from ..panes.kernels_pane import KernelsPane
from ..panes.log_pane import LogPane, LogSearch
from ..panes.steps_pane import StepsPane
from ..services import Services
from ..views.chart import KERNELS_HELP
from ..views.reducer import RunModel
from ..views.run_rows import banner_text, connection_badge, header_text
from ..views.simrows import next_sort_key, next_state_filter, no_match_text, sim_details
from ..widgets.sim_table import COLUMNS_HELP, SimTable
from .modals import MessageScreen


class RunScreen(ReportsWorkerErrors, Screen):
    BINDINGS = [
        # q quits everywhere (the app's key); Esc goes back.
        Binding("escape", "back", "Back", id="run.back"),
        Binding("l", "show('log')", "Log", id="run.log"),
        Binding("k", "show('kernels')", "Kernels", id="run.kernels"),
        Binding("f", "show('files')", "Files", id="run.files"),
        Binding("T", "show('steps')", "Step timeline", show=False, id="run.steps"),
        Binding("s", "sort", "Sort", show=False, id="run.sort"),
        Binding("S", "reverse_sort", "Reverse sort", show=False, id="run.reverse_sort"),
        # `f` is the files view here, so the sims state filter is on `v`.
        Binding("v", "state_filter", "Filter sims by state", show=False, id="run.state_filter"),
        Binding("slash", "search", "Search", id="run.search"),
        Binding("n", "find(False)", "Next match", show=False, id="run.next_match"),
        Binding("N", "find(True)", "Previous match", show=False, id="run.previous_match"),
        Binding("end", "follow", "Follow log", show=False, id="run.follow"),
        Binding("d", "download('results')", "Save results", show=False, id="run.save_results"),
        Binding("p", "download('perfetto')", "Save Perfetto", show=False, id="run.save_perfetto"),
        Binding("L", "download('log')", "Save sim log", show=False, id="run.save_log"),
        Binding("F", "download('files')", "Save sim files", show=False, id="run.save_files"),
        Binding("x", "cancel_run", "Cancel", id="run.cancel"),
        # The selected sim's error, exit code and log tail whole (a row cuts them at 80 columns).
        Binding("enter,i", "sim_details", "Sim details", show=False, id="run.sim_details"),
        Binding("z", "zoom", "Zoom pane", show=False, id="run.zoom"),
        Binding("o", "kernel_order", "Kernels by trace/time/spread", show=False, id="run.kernel_order"),
        Binding("R", "manage('rerun')", "Re-run", show=False, id="run.rerun"),
        Binding("Y", "manage('retry')", "Retry failed sims", show=False, id="run.retry"),
        Binding("D", "manage('delete')", "Delete run", show=False, id="run.delete"),
        Binding("w", "wrap", "Wrap log lines", show=False, id="run.wrap"),
        # Two panes: the sims table and the lower one (log, kernels or files); Tab swaps them
        # so the log and the files list are reachable without a mouse.
        Binding("tab", "other_pane", "Next pane", show=False, id="run.focus_next"),
        Binding("shift+tab", "other_pane", "Previous pane", show=False, id="run.focus_previous"),
    ]

    class ConnectionState(Message):
        def __init__(self, state: str, attempt: int, retry_in: float | None) -> None:
            super().__init__()
            self.state = state
            self.attempt = attempt
            self.retry_in = retry_in

    def __init__(self, run_id: str, services: Services) -> None:
        super().__init__()
        self.run_id = run_id
        self.services = services
        self.model = RunModel()
        self.connection = "connecting"
        self.connection_detail = ""
        self.view = "log"
        self.selected_sim: str | None = None
        self._header_text = ""
        self._banner_text = ""
        self._seen_states: dict[str, str] = {}
        self._seen_run_state: str | None = None
        self._timer: Timer | None = None
        self._focus_before_zoom: Widget | None = None  # what had the keys when `z` zoomed
        self.ticks = 0

    # --- layout -----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="run-header")
        yield Static("", id="stand-in")
        yield SimTable(now=self.services.now, id="sims")
        with ContentSwitcher(initial="log", id="bottom"):
            yield LogPane(self.model, self.services, id="log")
            yield KernelsPane(self.run_id, self.model, self.services, id="kernels")
            yield FilesPane(self.run_id, self.services, id="files")
            yield StepsPane(self.run_id, self.model, self.services, id="steps")
        yield Footer(compact=True)  # every key fits 80 columns, `? Help` included

    def on_mount(self) -> None:
        self.title = f"Cascade · {self.run_id}"
        self.query_one("#stand-in").display = False
        self._timer = self.set_interval(1.0 / self.services.settings.refresh_hz, self.tick)
        self.query_one(SimTable).focus()
        self._follow()

    def on_screen_suspend(self) -> None:
        # A modal or another screen is on top: stop rendering; the stream keeps the model current.
        if self._timer:
            self._timer.pause()

    def on_screen_resume(self) -> None:
        if self._timer:
            self._timer.resume()
        self.tick()

    def help_sections(self) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
        """What `?` shows besides the keys: what the sims table's columns mean."""
        return [("Sims table columns", COLUMNS_HELP), ("Kernels view", KERNELS_HELP)]

    @property
    def log_pane(self) -> LogPane:
        return self.query_one(LogPane)

    @property
    def kernels_pane(self) -> KernelsPane:
        return self.query_one(KernelsPane)

    @property
    def files_pane(self) -> FilesPane:
        return self.query_one(FilesPane)

    @property
    def steps_pane(self) -> StepsPane:
        return self.query_one(StepsPane)

    # --- the event stream ---------------------------------------------------------------------

    @work(exclusive=True, group="events", exit_on_error=False)
    async def _follow(self) -> None:
        def on_state(state: str, attempt: int, retry_in: float | None) -> None:
            self.post_message(self.ConnectionState(state, attempt, retry_in))

        try:
            async for event in self.services.client.follow_run(self.run_id, on_state):
                self.model.apply(event)
        except Exception:  # the app reports it; the header says the stream is gone
            self.post_message(self.ConnectionState("offline", 0, None))
            raise

    @on(ConnectionState)
    def _connection_changed(self, message: ConnectionState) -> None:
        self.connection = message.state
        if message.state == "reconnecting" and message.retry_in is not None:
            self.connection_detail = f"try {message.attempt}, next in {message.retry_in:.0f}s"
        else:
            self.connection_detail = ""
        self.query_one(SimTable).set_class(message.state != "live", "-stale")
        self._update_header()

    # --- the render tick ------------------------------------------------------------------------

    def tick(self) -> None:
        """Apply what changed since the last tick to the widgets (changed rows only)."""
        self.ticks += 1
        changes = self.model.take_changes()
        if self.model.has_snapshot:
            self.query_one(SimTable).update_rows(self.model.sims, changes.sims, reset=changes.reset)
        kernels = self.kernels_pane
        if changes.reset:
            kernels.dirty = True
            if self.selected_sim in self.model.sims:
                self.log_pane.load(self.selected_sim)  # lines during a disconnect are only in the log
            if self.model.run and self.model.run.trace.has_real_timing:
                kernels.load_comparison()
        else:
            self.log_pane.add(changes)
        if changes.kernels or changes.sims:
            kernels.dirty = True
        steps = self.steps_pane
        if changes.sims or changes.reset:
            steps.dirty = True
        if self.view == "steps" and steps.dirty:
            steps.draw()
        self._announce(changes.sims, changes.reset)
        if (
            self.view == "files"
            and self.selected_sim
            and (changes.reset or self.selected_sim in changes.sims)
        ):
            # A worker uploads its files before its final heartbeat: refetch when the shown sim's
            # state changes, not on every progress heartbeat.
            sim = self.model.sims.get(self.selected_sim)
            shown = self.files_pane.sim
            if changes.reset or sim is None or shown is None or sim.state != shown.state:
                self.files_pane.show(sim)
        if self.view == "kernels" and kernels.dirty:
            kernels.draw()
        self._update_header()
        self.log_pane.refresh_title()

    def _announce(self, changed: set[str], reset: bool) -> None:
        """Notify when a sim fails or the run finishes while the operator watches (not for what
        a snapshot already shows)."""
        states: dict[str, str] = {sim_id: sim.state for sim_id, sim in self.model.sims.items()}
        run_state = self.model.state() if self.model.run else None
        if not reset and self._seen_states:
            for sim_id in changed:
                sim = self.model.sims[sim_id]
                if sim.state == "failed" and self._seen_states.get(sim_id) != "failed":
                    self.notify(
                        f"{sim.label} #{sim.replica} failed: {sim.error or 'no reason given'}",
                        title="Sim failed",
                        severity="warning",
                        timeout=6,
                    )
            if self._seen_run_state == "active" and run_state not in (None, "active"):
                self.notify(f"{self.run_id} finished: {run_state}", title="Run finished", timeout=6)
        self._seen_states = states
        if run_state != self._seen_run_state:
            self._seen_run_state = run_state
            self.refresh_bindings()  # x (cancel) is offered while the run is active only

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_run":
            return self._seen_run_state in (None, "active")  # a finished run: nothing to cancel
        return True

    def _update_header(self) -> None:
        model = self.model
        badge = connection_badge(self.connection, self.connection_detail, model.is_finished())
        header = self.query_one("#run-header", Static)
        text = header_text(
            badge,
            self.run_id,
            model,
            self.query_one(SimTable).state_filter,
            self.services.now(),
            header.content_region.width or None,
        )
        if text != self._header_text:
            self._header_text = text
            header.update(text)
        new = banner_text(model)
        if new != self._banner_text:
            self._banner_text = new
            banner = self.query_one("#stand-in", Static)
            banner.update(new)
            banner.display = bool(new)

    # --- sims -----------------------------------------------------------------------------------

    @on(SimTable.Highlighted)
    def _sim_highlighted(self, message: SimTable.Highlighted) -> None:
        if message.sim_id is None and self.selected_sim is not None:
            # The state filter hides every sim: the log of one no longer listed would mislead.
            self.selected_sim = None
            self.log_pane.unload(no_match_text(self.query_one(SimTable).state_filter))
        if message.sim_id and message.sim_id != self.selected_sim:
            self.selected_sim = message.sim_id
            self.log_pane.load(message.sim_id)
            if self.view == "files":
                self.files_pane.show(self.model.sims.get(message.sim_id))

    # --- actions ----------------------------------------------------------------------------

    def action_back(self) -> None:
        # Like k9s with a filter: the first Esc drops the search, the next one goes back.
        if not self.log_pane.clear_search():
            self.app.pop_screen()

    @on(LogSearch.Dismiss)
    def _search_closed(self) -> None:
        self.query_one(SimTable).focus()

    def action_show(self, view: str) -> None:
        self.view = view
        self.query_one(ContentSwitcher).current = view
        if view == "kernels":
            self.kernels_pane.draw()
            self.kernels_pane.chart.focus()
        elif view == "files":
            self.files_pane.show(self.model.sims.get(self.selected_sim or ""))
            self.files_pane.options.focus()
        elif view == "steps":
            self.steps_pane.draw()
            self.steps_pane.chart.focus()
        elif self.has_class("-zoomed"):
            self.log_pane.view.focus()  # the sims table is hidden
        else:
            self.query_one(SimTable).focus()

    def _lower_pane(self) -> Widget:
        """The focusable widget of the lower pane showing now."""
        if self.view == "kernels":
            return self.kernels_pane.chart
        if self.view == "files":
            return self.files_pane.options
        if self.view == "steps":
            return self.steps_pane.chart
        return self.log_pane.view

    def action_other_pane(self) -> None:
        table = self.query_one(SimTable)
        if table.has_focus or self.has_class("-zoomed"):
            self._lower_pane().focus()  # zoomed, the lower pane is all there is
        else:
            table.focus()

    def action_sort(self) -> None:
        table = self.query_one(SimTable)
        table.set_sort(next_sort_key(table.sort_key), table.sort_reverse)
        self.notify(f"Sorted by {table.sort_key}", timeout=2)

    def action_manage(self, action: str) -> None:
        summary = self.model.summary()
        if summary is not None:
            self.post_message(ManageRun(action, summary))

    def action_sim_details(self) -> None:
        """The selected sim's state, exit code, error and log tail, whole (a row cuts them)."""
        sim = self.model.sims.get(self.selected_sim or "")
        if sim is None:
            self.notify("Select a sim first.", severity="warning")
            return
        log = self.log_pane
        tail = log.view.store.lines[-20:] if log.sim_id == sim.id and not log.loading else sim.log_tail
        self.app.push_screen(
            MessageScreen(f"Sim {sim.label} #{sim.replica}", sim_details(sim, tail, self.services.now()))
        )

    def action_kernel_order(self) -> None:
        if self.view != "kernels":
            self.action_show("kernels")
        self.notify(f"Kernels by {self.kernels_pane.next_order()}", timeout=2)

    def action_zoom(self) -> None:
        """The lower pane (log, kernels, files) gets the whole screen, and back: the keys go back
        to where they were (`z` twice changes nothing but the layout)."""
        zoomed = not self.has_class("-zoomed")
        self.set_class(zoomed, "-zoomed")
        table = self.query_one(SimTable)
        if zoomed:
            self._focus_before_zoom = self.focused
            self._lower_pane().focus()
        elif self._focus_before_zoom in (None, table):
            table.focus()
        else:  # the lower pane had the keys: it keeps them (the view shown now, if it changed)
            self._lower_pane().focus()

    def action_wrap(self) -> None:
        view = self.log_pane.view
        view.set_wrap(not view.wrap)
        if self.view != "log":
            self.action_show("log")
        self.notify("Log lines wrap" if view.wrap else "Log lines scroll sideways", timeout=2)

    def action_state_filter(self) -> None:
        table = self.query_one(SimTable)
        table.set_state_filter(next_state_filter(table.state_filter))
        self._update_header()
        if table.sims and not table.order:
            self.notify(f"Sims shown: {table.state_filter}: {no_match_text(table.state_filter)}", timeout=3)
        else:
            self.notify(f"Sims shown: {table.state_filter}", timeout=2)

    def action_reverse_sort(self) -> None:
        table = self.query_one(SimTable)
        table.set_sort(table.sort_key, not table.sort_reverse)

    def action_search(self) -> None:
        self.action_show("log")
        self.log_pane.open_search()

    def action_find(self, backwards: bool) -> None:
        self.log_pane.find(backwards)

    def action_follow(self) -> None:
        self.log_pane.follow()

    def action_download(self, what: str) -> None:
        self.files_pane.download(what, self.selected_sim)

    def action_cancel_run(self) -> None:
        unfinished = sum(1 for s in self.model.sims.values() if s.state not in TERMINAL_SIM_STATES)
        self.post_message(ConfirmCancel(self.run_id, unfinished))
