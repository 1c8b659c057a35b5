"""New run: a ready trace, the GPU configs of its arch (the suggested one preselected), a count
per config (1..64); above 4 sims in total a confirmation listing the entries; launched once."""

from __future__ import annotations

from functools import partial

from rich.markup import escape
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, OptionList, Static
from textual.widgets.option_list import Option

from cascade_server.shared.models import (
    MAX_ENTRY_COUNT,
    GpuConfig,
    LauncherStatus,
    RunCreate,
    RunEntry,
    TraceSummary,
)

from ..capacity import start_plan
from ..client import ApiError
from ..formatting import human_bytes, plural
from ..messages import OpenRun, ReportsWorkerErrors
from ..services import Services
from ..simulator_view import simulator_line
from .modals import ConfirmScreen

CONFIRM_ABOVE = 4  # sims in total; more asks first
LAUNCHER_POLL_SECONDS = 2.0  # how often the "start now / wait" line learns how busy the launcher is


def launchable(traces: list[TraceSummary]) -> list[TraceSummary]:
    return [t for t in traces if t.state == "ready" and not t.sample]


def initial_counts(trace: TraceSummary, configs: list[GpuConfig]) -> dict[str, int]:
    """The suggested config (or the trace's preselected sample configs) at 1, others at 0."""
    names = {c.name for c in configs}
    chosen = [
        n
        for n in ([trace.suggested_sim_config] if trace.suggested_sim_config else [])
        + list(trace.sample_sim_configs)
        if n in names
    ]
    if not chosen and len(configs) == 1:
        chosen = [configs[0].name]
    return {c.name: (1 if c.name in chosen else 0) for c in configs}


def entries_from(counts: dict[str, int]) -> list[RunEntry]:
    return [RunEntry(gpu_config=name, count=n) for name, n in counts.items() if n > 0]


class NewRunScreen(ReportsWorkerErrors, Screen):
    BINDINGS = [
        Binding("escape", "back", "Back", id="new_run.back"),
        Binding("enter,ctrl+s", "launch", "Launch", priority=True, id="new_run.launch"),
        Binding("space", "toggle", "Pick config", id="new_run.toggle"),
        Binding("plus,equals_sign,right", "change(1)", "+1", id="new_run.more"),
        Binding("minus,left", "change(-1)", "-1", id="new_run.fewer"),
        Binding(
            "left_square_bracket", "other_trace(-1)", "Prev trace", show=False, id="new_run.previous_trace"
        ),
        Binding("right_square_bracket", "other_trace(1)", "Next trace", show=False, id="new_run.next_trace"),
    ]
    DEFAULT_CSS = """
    NewRunScreen #new-run-trace { padding: 0 1; height: auto; }
    NewRunScreen #new-run-help { padding: 0 1; color: $text-muted; }
    NewRunScreen #new-run-total { padding: 0 1; text-style: bold; height: auto; }
    NewRunScreen #new-run-plan { padding: 0 1; height: auto; }
    NewRunScreen OptionList { height: 1fr; }
    """

    ERROR_TITLES = {"launch": "Launch failed"}

    def __init__(self, trace: TraceSummary | None, services: Services) -> None:
        super().__init__()
        self.services = services
        self.trace = trace
        self.traces: list[TraceSummary] = [trace] if trace else []
        self.all_configs: list[GpuConfig] = []
        self.configs: list[GpuConfig] = []
        self.counts: dict[str, int] = {}
        self.launching = False
        self.launched_run: str | None = None
        self.launcher: LauncherStatus | None = None  # None until the server says (or if it cannot)

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical():
            yield Static("loading traces and GPU configs…", id="new-run-trace")
            yield Static(
                "space: pick/unpick a config   + / -: count   [ / ]: other trace   Enter: launch   Esc: back",
                id="new-run-help",
            )
            yield OptionList(id="configs")
            yield Static("", id="new-run-total")
            yield Static("", id="new-run-plan")
        yield Footer(compact=True)  # every key fits 80 columns, `? Help` included

    def on_mount(self) -> None:
        self.title = "Cascade · New run"
        self._load()
        self._fetch_launcher()
        # Sims finish and other runs start meanwhile: keep "N start now" true while the form is open.
        self.set_interval(LAUNCHER_POLL_SECONDS, self._fetch_launcher)

    @work(exclusive=True, group="launcher", exit_on_error=False)
    async def _fetch_launcher(self) -> None:
        try:
            self.launcher = await self.services.client.launcher()
        except ApiError:
            self.launcher = None  # an older server without the route: the form works without it
        self._show_plan()

    @work(exclusive=True, group="load", exit_on_error=False)
    async def _load(self) -> None:
        traces = launchable(await self.services.client.traces())
        self.all_configs = await self.services.client.gpu_configs()
        if self.trace is not None and self.trace.id not in {t.id for t in traces}:
            traces.insert(0, self.trace)
        self.traces = traces
        if self.trace is None:
            if not traces:
                self.query_one("#new-run-trace", Static).update(
                    "No trace is ready to run. Upload one with `cascade upload`, then wait for "
                    "it to be ready on the Traces screen (t)."
                )
                return
            self.trace = traces[0]
        self._select_trace(self.trace)

    def _select_trace(self, trace: TraceSummary) -> None:
        self.trace = trace
        self.configs = [c for c in self.all_configs if c.arch == trace.trace_gpu_arch]
        self.counts = initial_counts(trace, self.configs)
        info = (
            f"Trace [b]{escape(trace.id)}[/]  {escape(trace.model or '')}  arch {trace.trace_gpu_arch}  "
            f"{plural(trace.kernel_count, 'kernel')}  {human_bytes(trace.bytes)}"
        )
        if trace.state != "ready" or trace.sample:
            info += "\n[red]This trace cannot start a run"
            info += (
                ": it is the sample trace, which has no instruction traces.[/]"
                if trace.sample
                else f": it is {trace.state}, not ready.[/]"
            )
        elif not self.configs:
            info += (
                f"\n[red]No GPU config has arch {trace.trace_gpu_arch}; "
                "the server knows: " + ", ".join(sorted({c.arch for c in self.all_configs})) + "[/]"
            )
        self.query_one("#new-run-trace", Static).update(info)
        options = self.query_one("#configs", OptionList)
        options.clear_options()
        options.add_options([Option(self._prompt(c), id=c.name) for c in self.configs])
        if self.configs:
            first = next((i for i, c in enumerate(self.configs) if self.counts[c.name]), 0)
            options.highlighted = first
        options.focus()
        self._update_total()

    def _prompt(self, config: GpuConfig) -> Text:
        n = self.counts.get(config.name, 0)
        mark = "[x]" if n else "[ ]"
        suggested = "  (suggested)" if self.trace and config.name == self.trace.suggested_sim_config else ""
        count = f"× {n}" if n else "   "
        return Text(
            f"{mark} {config.name:<20} {config.arch:<6} {config.core_clock_mhz:>7.0f} MHz  "
            f"{count}{suggested}",
            style="bold" if n else "",
        )

    def _refresh_option(self, name: str) -> None:
        options = self.query_one("#configs", OptionList)
        config = next(c for c in self.configs if c.name == name)
        options.replace_option_prompt(name, self._prompt(config))
        self._update_total()

    def _update_total(self) -> None:
        entries = entries_from(self.counts)
        total = sum(e.count for e in entries)
        if not entries:
            text = "Pick at least one config (space)."
        else:
            text = (
                f"{len(entries)} config{'s' if len(entries) != 1 else ''}, "
                f"{total} sim{'s' if total != 1 else ''} in total"
                + ("  (you will be asked to confirm)" if total > CONFIRM_ABOVE else "")
            )
        self.query_one("#new-run-total", Static).update(text)
        self._show_plan()

    def _show_plan(self) -> None:
        if self.launching or self.launched_run:
            return
        total = sum(e.count for e in entries_from(self.counts))
        sim_line = simulator_line(self.launcher.simulator if self.launcher else None)
        plan = start_plan(self.launcher, total)
        self.query_one("#new-run-plan", Static).update("\n".join(t for t in (plan, sim_line) if t))

    def _highlighted_config(self) -> str | None:
        options = self.query_one("#configs", OptionList)
        if options.highlighted is None or not self.configs:
            return None
        return options.get_option_at_index(options.highlighted).id

    def action_toggle(self) -> None:  # type: ignore[override]  # not DOMNode's toggle(attribute)
        name = self._highlighted_config()
        if name is not None:
            self.counts[name] = 0 if self.counts[name] else 1
            self._refresh_option(name)

    def action_change(self, delta: int) -> None:
        name = self._highlighted_config()
        if name is not None:
            self.counts[name] = max(0, min(MAX_ENTRY_COUNT, self.counts[name] + delta))
            self._refresh_option(name)

    @on(OptionList.OptionSelected, "#configs")
    def _option_clicked(self, message: OptionList.OptionSelected) -> None:
        # Enter is the launch key (priority binding), so this comes from a mouse click: toggle.
        self.action_toggle()

    def action_other_trace(self, step: int) -> None:
        if not self.traces or self.trace is None:
            return
        ids = [t.id for t in self.traces]
        i = ids.index(self.trace.id) if self.trace.id in ids else 0
        self._select_trace(self.traces[(i + step) % len(self.traces)])

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_launch(self) -> None:
        if self.launching or self.launched_run:
            return
        trace = self.trace
        entries = entries_from(self.counts)
        if trace is None or trace.state != "ready" or trace.sample:
            self.notify("This trace cannot start a run.", severity="error")
            return
        if not entries:
            self.notify("Pick at least one config (space).", severity="warning")
            return
        total = sum(e.count for e in entries)
        body = RunCreate(trace_id=trace.id, entries=entries)
        if total > CONFIRM_ABOVE:
            listing = "\n".join(f"  {e.gpu_config:<22} × {e.count}" for e in entries)
            self.app.push_screen(
                ConfirmScreen(
                    f"Launch {plural(total, 'sim')}?",
                    f"Trace {trace.id}\n{listing}\n\n{plural(total, 'sim')} in total.",
                ),
                partial(self._launch_if, body),
            )
        else:
            self._launch(body)

    def _launch_if(self, body: RunCreate, yes: bool | None) -> None:
        if yes:
            self._launch(body)

    @work(exclusive=True, group="launch", exit_on_error=False)
    async def _launch(self, body: RunCreate) -> None:
        if self.launching or self.launched_run:
            return
        self.launching = True
        self.query_one("#new-run-total", Static).update("launching…")
        try:
            run = await self.services.client.create_run(body)
        except Exception:  # the app reports it; the form can launch again
            self.launching = False
            self._update_total()
            raise
        self.launched_run = run.id
        self.notify(f"Launched {run.id}: {plural(len(run.sims), 'sim')}", title="New run")
        self.app.pop_screen()
        self.app.post_message(OpenRun(run.id))  # this screen is gone: post to the app itself
