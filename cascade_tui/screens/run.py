"""One run, live: header, sims table, and a bottom pane switching between the selected sim's log,
the kernels comparison and files/downloads.

Data flow: one SSE worker applies events to a `RunModel` (pure) as they arrive; a render timer
(1-4 Hz) takes the accumulated changes and updates widgets (changed rows only). Nothing touches a
widget once per event.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.markup import escape
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import ContentSwitcher, Footer, Header, Input, OptionList, Static
from textual.widgets.option_list import Option

from cascade_server.models import RunFile

from .. import chart, compare
from ..client import ApiError
from ..formatting import human_bytes, plural, saved_message, state_label
from ..loglines import compile_search, merge_live
from ..reducer import RunModel
from ..widgets.kernel_chart import KernelChart
from ..widgets.log_view import LogView
from ..widgets.sim_table import SimTable
from ..widgets.steps_pane import StepsPane

if TYPE_CHECKING:
    from ..app import CascadeApp

COMPARISON_REFRESH_S = 5.0


class RunScreen(Screen):
    BINDINGS = [
        # q quits everywhere (the app's key); Esc goes back.
        Binding("escape", "back", "Back", id="run.back"),
        Binding("l", "show('log')", "Log", id="run.log"),
        Binding("k", "show('kernels')", "Kernels", id="run.kernels"),
        Binding("f", "show('files')", "Files", id="run.files"),
        Binding("T", "show('steps')", "Step timeline", show=False, id="run.steps"),
        Binding("s", "sort", "Sort", show=False, id="run.sort"),
        Binding("S", "reverse_sort", "Reverse sort", show=False, id="run.reverse_sort"),
        Binding("slash", "search", "Search", id="run.search"),
        Binding("n", "find(False)", "Next match", show=False, id="run.next_match"),
        Binding("N", "find(True)", "Previous match", show=False, id="run.previous_match"),
        Binding("end", "follow", "Follow log", show=False, id="run.follow"),
        Binding("d", "download('results')", "Save results", show=False, id="run.save_results"),
        Binding("p", "download('perfetto')", "Save Perfetto", show=False, id="run.save_perfetto"),
        Binding("L", "download('log')", "Save sim log", show=False, id="run.save_log"),
        Binding("F", "download('files')", "Save sim files", show=False, id="run.save_files"),
        Binding("x", "cancel_run", "Cancel", id="run.cancel"),
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

    def __init__(self, run_id: str) -> None:
        super().__init__()
        self.run_id = run_id
        self.model = RunModel()
        self.connection = "connecting"
        self.connection_detail = ""
        self.view = "log"
        self.selected_sim: str | None = None
        self._log_loading = False
        self._log_stash: list[list[str]] = []
        self._header_text = ""
        self._seen_states: dict[str, str] = {}
        self._seen_run_state: str | None = None
        self._banner_text = ""
        self._log_title = ""
        self._log_status = ""
        self._chart_dirty = True
        self._real_ns: dict[int, float | None] = {}
        self._real_names: dict[int, str] = {}
        self._last_comparison = 0.0
        self._files: list[RunFile] = []
        self._timer = None
        self.ticks = 0

    @property
    def cascade(self) -> CascadeApp:
        return self.app  # type: ignore[return-value]

    # --- layout -----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="run-header")
        yield Static("", id="stand-in")
        yield SimTable(now=self.cascade.now, id="sims")
        with ContentSwitcher(initial="log", id="bottom"):
            with Vertical(id="log"):
                yield Static("", id="log-title")
                yield LogView(self.cascade.settings.log_max_lines, id="log-view")
                yield Input(placeholder="search the log (regex; Enter to find, Esc to close)",
                            id="search")
            yield KernelChart(id="kernels")
            yield StepsPane(self.run_id, self.model, id="steps")
            with Vertical(id="files"):
                yield Static("Enter saves the highlighted item to "
                             f"{self.cascade.settings.download_dir}", id="files-title")
                yield OptionList(id="files-list")
        yield Footer(compact=True)  # every key fits 80 columns, `? Help` included

    def on_mount(self) -> None:
        self.title = f"Cascade · {self.run_id}"
        self.query_one("#search").display = False
        self.query_one("#stand-in").display = False
        self._timer = self.set_interval(1.0 / self.cascade.settings.refresh_hz, self.tick)
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

    # --- the event stream ---------------------------------------------------------------------

    @work(exclusive=True, group="events", exit_on_error=False)
    async def _follow(self) -> None:
        def on_state(state: str, attempt: int, retry_in: float | None) -> None:
            self.post_message(self.ConnectionState(state, attempt, retry_in))

        try:
            async for event in self.cascade.client.follow_run(self.run_id, on_state):
                self.model.apply(event)
        except ApiError as exc:
            self.post_message(self.ConnectionState("offline", 0, None))
            self.cascade.report_error(exc)

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
        table = self.query_one(SimTable)
        if self.model.has_snapshot:
            table.update_rows(self.model.sims, changes.sims, reset=changes.reset)
        if changes.reset:
            self._chart_dirty = True
            if self.selected_sim in self.model.sims:
                self._load_log(self.selected_sim)  # lines during a disconnect are only in the log
            if self.model.run and self.model.run.trace.has_real_timing:
                self._load_comparison()
        elif changes.log_chunks:
            if self._log_loading:
                self._log_stash.extend(changes.log_chunks)
            else:
                self.query_one(LogView).append(changes.log_lines)
        if changes.kernels or changes.sims:
            self._chart_dirty = True
        steps = self.query_one(StepsPane)
        if changes.sims or changes.reset:
            steps.dirty = True
        if self.view == "steps" and steps.dirty:
            steps.draw()
        self._announce(changes.sims, changes.reset)
        if self.view == "kernels" and self._chart_dirty:
            self._render_chart()
        self._update_header()
        self._update_log_status()

    def _announce(self, changed: set[str], reset: bool) -> None:
        """Notify when a sim fails or the run finishes while the operator watches (not for what
        a snapshot already shows)."""
        states = {sim_id: sim.state for sim_id, sim in self.model.sims.items()}
        run_state = self.model.state() if self.model.run else None
        if not reset and self._seen_states:
            for sim_id in changed:
                sim = self.model.sims[sim_id]
                if sim.state == "failed" and self._seen_states.get(sim_id) != "failed":
                    self.notify(f"{sim.gpu_config} #{sim.replica} failed: {sim.error or 'no reason given'}",
                                title="Sim failed", severity="warning", timeout=6)
            if self._seen_run_state == "active" and run_state not in (None, "active"):
                self.notify(f"{self.run_id} finished: {run_state}", title="Run finished", timeout=6)
        self._seen_states = states
        self._seen_run_state = run_state

    def _update_header(self) -> None:
        model = self.model
        badge = {
            "live": "[b green]● LIVE[/]",
            "connecting": "[yellow]○ CONNECTING[/]",
            "reconnecting": "[b yellow]◌ RECONNECTING[/]",
            "offline": "[b red]✘ OFFLINE[/]",
        }.get(self.connection, self.connection)
        if self.connection_detail:
            badge += f" [dim]({self.connection_detail})[/]"
        if model.run is None:
            text = f"{badge}  [b]{self.run_id}[/]"
        else:
            counts = model.sim_counts()
            order = ("running", "launching", "pending", "lost", "succeeded", "failed", "cancelled")
            count_text = " · ".join(f"{counts[s]} {s}" for s in order if counts.get(s))
            # Most important first, so an 80-column terminal cuts the least useful part: the
            # trace id before the counts, the run id (also in the title bar) last.
            text = (f"{badge}  {state_label(model.state())}  trace [b]{escape(model.run.trace_id)}[/]"
                    f"  {count_text}  [b]{model.run.id}[/]")
        if text != self._header_text:
            self._header_text = text
            self.query_one("#run-header", Static).update(text)
        summary = model.summary()
        reason = compare.stand_in_reason(summary, model.sims.values()) if model.run else None
        if reason:
            new = f"⚠ Stand-in numbers, not a simulation of this trace: {reason}."
        else:
            new = compare.sample_note(summary) or ""
        if new != self._banner_text:
            self._banner_text = new
            banner = self.query_one("#stand-in", Static)
            banner.update(new)
            banner.display = bool(new)

    def _update_log_status(self) -> None:
        view = self.query_one(LogView)
        sim = self.model.sims.get(self.selected_sim or "")
        if sim is None:
            title = "log: select a sim"
        else:
            loading = " · loading…" if self._log_loading else ""
            title = (f"log {sim.gpu_config} #{sim.replica} {sim.id} · {plural(len(view.store), 'line')} · "
                     f"{view.status_text()}{loading}")
        if view.has_focus:
            title = f"▶ {title} · Tab: sims"  # the keys scroll the log, not the sims table
        if title != self._log_title:
            self._log_title = title
            self.query_one("#log-title", Static).update(title)

    def on_descendant_focus(self) -> None:
        self._update_log_status()
        self._update_files_title()

    def on_descendant_blur(self) -> None:
        self._update_log_status()
        self._update_files_title()

    def _update_files_title(self) -> None:
        focused = self.query_one("#files-list").has_focus
        self.query_one("#files-title", Static).update(
            ("▶ " if focused else "") + "Enter saves the highlighted item to "
            f"{self.cascade.settings.download_dir}" + ("" if focused else " · Tab: this list"))

    # --- sims and their logs ------------------------------------------------------------------

    @on(SimTable.Highlighted)
    def _sim_highlighted(self, message: SimTable.Highlighted) -> None:
        if message.sim_id and message.sim_id != self.selected_sim:
            self.selected_sim = message.sim_id
            self._load_log(message.sim_id)
            if self.view == "files":
                self._load_files()

    def _load_log(self, sim_id: str) -> None:
        self.model.watch(sim_id)
        self._log_loading = True
        self._log_stash = []
        view = self.query_one(LogView)
        view.clear()
        # Show the last lines the snapshot already has while the full tail loads.
        sim = self.model.sims.get(sim_id)
        if sim is not None:
            view.append(list(sim.log_tail))
        self._fetch_log(sim_id)

    @work(exclusive=True, group="log", exit_on_error=False)
    async def _fetch_log(self, sim_id: str) -> None:
        try:
            lines, _total = await self.cascade.client.log_tail(
                sim_id, self.cascade.settings.log_max_lines)
        except ApiError as exc:
            self._log_loading = False
            self.cascade.report_error(exc)
            return
        if sim_id != self.selected_sim:
            return
        # Chunks still waiting in the model belong after the stash; take them now.
        stash = self._log_stash + self.model.take_log_chunks()
        view = self.query_one(LogView)
        view.clear()
        view.append(lines)
        view.append(merge_live(lines, stash))
        self._log_loading = False
        self._log_stash = []
        self._update_log_status()

    # --- kernels view -----------------------------------------------------------------------

    def _render_chart(self) -> None:
        model = self.model
        self._chart_dirty = False
        if model.run is None:
            return
        configs = compare.config_order((e.gpu_config for e in model.run.entries),
                                       model.sims.values())
        kernels = model.all_kernels()
        rows = compare.kernel_rows(configs, model.sims, kernels, self._real_ns, self._real_names)
        totals = compare.config_totals(configs, model.sims, kernels)
        has_real = model.run.trace.has_real_timing
        widget = self.query_one("#kernels", KernelChart)
        widget.set_lines(chart.chart_lines(
            configs, rows, totals, compare.rank(totals), compare.mape(rows, configs), has_real,
            max(60, widget.size.width), compare.stand_in_reason(model.summary(), model.sims.values()),
            finished=model.is_finished(),
        ))
        if has_real and not model.is_finished():
            self._load_comparison()

    @work(exclusive=True, group="comparison", exit_on_error=False)
    async def _load_comparison(self) -> None:
        now = time.monotonic()
        if now - self._last_comparison < COMPARISON_REFRESH_S:
            return
        self._last_comparison = now
        try:
            result = await self.cascade.client.comparison(self.run_id)
        except ApiError as exc:
            self.cascade.report_error(exc)
            return
        self._real_ns = {row.kernel_index: row.real_ns for row in result.rows}
        self._real_names = {row.kernel_index: row.kernel_name for row in result.rows}
        self._chart_dirty = True

    # --- files and downloads --------------------------------------------------------------------

    @work(exclusive=True, group="files", exit_on_error=False)
    async def _load_files(self) -> None:
        try:
            files = await self.cascade.client.run_files(self.run_id)
        except ApiError as exc:
            self.cascade.report_error(exc)
            return
        self._files = files
        self._fill_files()

    def _fill_files(self) -> None:
        options: list[Option | None] = [
            Option("Run results (JSON, every sim's stats and the comparison)", id="results"),
            Option("Perfetto trace of the run (JSON, open in ui.perfetto.dev)", id="perfetto"),
        ]
        sim = self.model.sims.get(self.selected_sim or "")
        if sim is not None:
            options.append(Option(f"Log of {sim.gpu_config} #{sim.replica} ({sim.id}.log)", id="log"))
            mine = [f for f in self._files if f.sim_id == sim.id]
            if mine:
                options.append(Option(f"All {plural(len(mine), 'file')} of {sim.gpu_config} #{sim.replica}"
                                      if len(mine) > 1 else
                                      f"The only file of {sim.gpu_config} #{sim.replica}",
                                      id="files"))
            options.append(None)
            for f in mine:
                options.append(Option(f"{f.name}  {human_bytes(f.size)}  {f.content_type}",
                                      id=f"file:{f.name}"))
            if not mine:
                options.append(Option("(this sim has uploaded no files yet)", id="none",
                                      disabled=True))
        files_list = self.query_one("#files-list", OptionList)
        highlighted = files_list.highlighted
        files_list.clear_options()
        files_list.add_options(options)
        if highlighted is not None and highlighted < files_list.option_count:
            files_list.highlighted = highlighted
        elif files_list.option_count:
            files_list.highlighted = 0  # Enter saves something at once, arrows start from the top

    @on(OptionList.OptionSelected, "#files-list")
    def _file_chosen(self, message: OptionList.OptionSelected) -> None:
        option_id = message.option.id or ""
        if option_id.startswith("file:"):
            self._download_file(option_id[5:])
        elif option_id in ("results", "perfetto", "log", "files"):
            self.action_download(option_id)

    def action_download(self, what: str) -> None:
        sim_id = self.selected_sim
        if what in ("log", "files") and sim_id is None:
            self.notify("Select a sim first.", severity="warning")
            return
        self._download(what, sim_id)

    @work(group="downloads", exit_on_error=False)
    async def _download(self, what: str, sim_id: str | None) -> None:
        client, dest = self.cascade.client, self.cascade.settings.download_dir
        try:
            if what == "results":
                paths = [await client.download(f"/api/runs/{self.run_id}/results", dest,
                                               f"{self.run_id}-results.json")]
            elif what == "perfetto":
                paths = [await client.download(f"/api/runs/{self.run_id}/perfetto", dest,
                                               f"{self.run_id}-perfetto.json")]
            elif what == "log":
                paths = [await client.download(f"/api/sims/{sim_id}/log", dest, f"{sim_id}.log")]
            else:
                files = await client.sim_files(sim_id or "")
                if not files:
                    self.notify("This sim has uploaded no files yet.", severity="warning")
                    return
                paths = [await client.download(f"/api/sims/{sim_id}/files/{f.name}",
                                               dest / (sim_id or ""), f.name) for f in files]
        except (ApiError, OSError) as exc:
            self.cascade.report_error(exc)
            return
        self.notify(saved_message(paths), title="Download saved", markup=False)

    @work(group="downloads", exit_on_error=False)
    async def _download_file(self, name: str) -> None:
        sim_id = self.selected_sim
        try:
            path = await self.cascade.client.download(
                f"/api/sims/{sim_id}/files/{name}",
                self.cascade.settings.download_dir / (sim_id or ""), name)
        except (ApiError, OSError) as exc:
            self.cascade.report_error(exc)
            return
        self.notify(saved_message([path]), title="Download saved", markup=False)

    # --- actions ----------------------------------------------------------------------------

    def action_back(self) -> None:
        if self.query_one("#search").display:
            self._close_search()
            return
        self.app.pop_screen()

    def action_show(self, view: str) -> None:
        self.view = view
        self.query_one(ContentSwitcher).current = view
        if view == "kernels":
            self._render_chart()
            self.query_one("#kernels", KernelChart).focus()
        elif view == "files":
            self._fill_files()
            self._load_files()
            self.query_one("#files-list").focus()
        elif view == "steps":
            self.query_one(StepsPane).draw()
            self.query_one(StepsPane).chart.focus()
        else:
            self.query_one(SimTable).focus()

    def _lower_pane(self) -> Widget:
        """The focusable widget of the lower pane showing now."""
        selector = {"log": "#log-view", "kernels": "#kernels", "steps": "#step-chart"}.get(self.view, "#files-list")
        return self.query_one(selector)

    def action_other_pane(self) -> None:
        table = self.query_one(SimTable)
        if table.has_focus:
            self._lower_pane().focus()
        else:
            table.focus()

    def action_sort(self) -> None:
        from ..simrows import next_sort_key

        table = self.query_one(SimTable)
        table.set_sort(next_sort_key(table.sort_key), table.sort_reverse)
        self.notify(f"Sorted by {table.sort_key}", timeout=2)

    def action_reverse_sort(self) -> None:
        table = self.query_one(SimTable)
        table.set_sort(table.sort_key, not table.sort_reverse)

    def action_search(self) -> None:
        self.action_show("log")
        search = self.query_one("#search", Input)
        search.display = True
        search.focus()

    def _close_search(self) -> None:
        search = self.query_one("#search", Input)
        search.display = False
        self.query_one(SimTable).focus()

    @on(Input.Submitted, "#search")
    def _search_submitted(self, message: Input.Submitted) -> None:
        view = self.query_one(LogView)
        text = message.value.strip()
        view.set_search(compile_search(text) if text else None)
        self._close_search()
        if text and not view.find():
            self.notify(f"No line matches {text!r} in the {plural(len(view.store), 'line')} kept.",
                        severity="warning")
        self._update_log_status()

    def action_find(self, backwards: bool) -> None:
        view = self.query_one(LogView)
        if view.pattern is None:
            self.action_search()
            return
        if not view.find(backwards=backwards):
            self.notify("No more matches.", severity="warning", timeout=2)
        self._update_log_status()

    def action_follow(self) -> None:
        self.query_one(LogView).action_follow()
        self._update_log_status()

    def action_cancel_run(self) -> None:
        unfinished = sum(1 for s in self.model.sims.values()
                         if s.state not in ("succeeded", "failed", "cancelled"))
        self.cascade.confirm_cancel(self.run_id, unfinished)

    def key_escape(self) -> None:
        if self.query_one("#search").display:
            self._close_search()
