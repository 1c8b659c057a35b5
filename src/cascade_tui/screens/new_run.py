"""New run: a ready trace, the GPU configs of its arch (only the suggested one preselected), a count
per config (1..64), variants of a config (`a`: a simulator option and value, see
`variant_editor.py`) under it, shards per sim (`<` / `>`, with the expected speed-up and the
measured error), sampling (`m`) and power (`w`, on the configs with a power model); above 4 sims in total a confirmation listing the entries; launched once. The
rows' logic is pure, in `variant_form.py`.

The screen holds the keys, the layout and the trace; its parts are mixins, each in its module:
the config list (`new_run_configs.py`), its variants (`new_run_variants.py`), the lines under it
(`new_run_plan.py`) and the launch (`new_run_launch.py`)."""

from __future__ import annotations

from rich.markup import escape
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, OptionList, Static

from cascade_core.arch_support import unsupported_arch_problem
from cascade_core.models import TraceSummary

from ..connection.client_errors import ApiError
from ..messages import ReportsWorkerErrors
from ..services import Services
from ..views.formatting import human_bytes, plural
from ..views.variant_form import add_variant, initial_rows, set_count
from .new_run_launch import Launch
from .new_run_variants import VariantRows

LAUNCHER_POLL_SECONDS = 2.0  # how often the "start now / wait" line learns how busy the launcher is


def launchable(traces: list[TraceSummary]) -> list[TraceSummary]:
    return [t for t in traces if t.state == "ready" and not t.sample]


class NewRunScreen(ReportsWorkerErrors, VariantRows, Launch, Screen):
    BINDINGS = [
        Binding("escape", "back", "Back", id="new_run.back"),
        Binding("enter,ctrl+s", "launch", "Launch", priority=True, id="new_run.launch"),
        # The footer's words are short (at 80 columns `? Help` must stay whole); the help and the
        # command palette say all of it (the tooltip: `modals.binding_rows`).
        Binding(
            "space",
            "toggle",
            "Pick config",
            tooltip="Pick or unpick a config, then the next row",
            id="new_run.toggle",
        ),
        Binding("plus,equals_sign,right", "change(1)", "+1", id="new_run.more"),
        # `-` and `x` are not in the footer, so 80 columns hold `a` and `? Help` whole (the lines
        # above the list say both).
        Binding("minus,left", "change(-1)", "-1", show=False, id="new_run.fewer"),
        # A variant of the highlighted config: a simulator option and value (variant_editor.py).
        Binding(
            "a",
            "add_variant",
            "Variant",
            tooltip="Add a variant of the highlighted config: a simulator option and value",
            id="new_run.add_variant",
        ),
        Binding(
            "x,delete",
            "remove_variant",
            "Drop variant",
            show=False,
            tooltip="Drop the highlighted variant",
            id="new_run.remove_variant",
        ),
        Binding(
            "m",
            "sampling",
            "Sampling",
            show=False,
            tooltip="Sampling: none, identical or stratified (simulate representative kernels only)",
            id="new_run.sampling",
        ),
        Binding(
            "w",
            "power",
            "Power",
            show=False,
            tooltip="Power: simulate each kernel's power with AccelWattch (about 2-3x the simulation time)",
            id="new_run.power",
        ),
        Binding("greater_than_sign", "shards(1)", "Shards+", show=False, id="new_run.more_shards"),
        Binding("less_than_sign", "shards(-1)", "Shards-", show=False, id="new_run.fewer_shards"),
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
    NewRunScreen #new-run-shards { padding: 0 1; height: auto; }
    NewRunScreen #new-run-sampling { padding: 0 1; height: auto; }
    NewRunScreen #new-run-power { padding: 0 1; height: auto; }
    NewRunScreen OptionList { height: 1fr; }
    """

    ERROR_TITLES = {"launch": "Launch failed"}

    def __init__(self, trace: TraceSummary | None, services: Services) -> None:
        super().__init__()
        self.services = services
        self.trace = trace
        self.traces = [trace] if trace else []
        self.all_configs = []
        self.configs = []
        self.rows = []  # a row per config, its variants under it
        self.option_cache = {}  # a config's options, loaded once
        self.shards = 1  # sims per replica, each simulating a part of the trace
        self.sampling = "none"  # or "identical" / "stratified": simulate representative kernels
        self.sampling_figures = []  # what each method would simulate of the trace
        self.power = False  # AccelWattch on the picked configs that have a power model
        self.kernel_costs = []  # the trace's instructions per kernel, for the speed-up
        self.launching = False
        self.launched_run = None
        self.launcher = None  # None until the server says (or if it cannot)

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical():
            yield Static("loading traces and GPU configs…", id="new-run-trace")
            # Two lines, each whole at 80 columns (wrapped, `Enter:` was left apart from `launch`).
            yield Static(
                "space: pick   + / -: count   a: add a variant (option = value)   x: drop it\n"
                "[ / ]: other trace   m: sampling   w: power   Enter: launch   Esc: back",
                id="new-run-help",
            )
            yield OptionList(id="configs")
            yield Static("", id="new-run-shards")
            yield Static("", id="new-run-sampling")
            yield Static("", id="new-run-power", markup=False)
            yield Static("", id="new-run-total")
            yield Static("", id="new-run-plan")
        yield Footer(compact=True)  # every key fits 80 columns, `? Help` included

    def on_mount(self) -> None:
        self.title = "Cascade · New run"
        self._load()
        self._fetch_launcher()
        # Sims finish and other runs start meanwhile: keep "N start now" true while the form is open.
        self.set_interval(LAUNCHER_POLL_SECONDS, self._fetch_launcher)

    @work(exclusive=True, group="load", exit_on_error=False)
    async def _load(self) -> None:
        traces = launchable(await self.services.client.traces())
        self.all_configs = await self.services.client.gpu_configs()
        try:  # which trace archs the simulator runs, known before a trace is shown
            self.launcher = await self.services.client.launcher()
        except ApiError:
            self.launcher = None
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
        rows = initial_rows(trace, self.configs)
        for row in self.rows:  # variants made for the previous trace stay when their config does
            if row.is_variant and any(r.gpu_config == row.gpu_config for r in rows):
                rows, added = add_variant(rows, row.gpu_config, row.options, row.label)
                rows = set_count(rows, added.key, row.count)
        self.rows = rows
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
        elif problem := unsupported_arch_problem(
            trace.trace_gpu_arch,
            self.launcher.simulator.archs if self.launcher and self.launcher.simulator else None,
        ):
            info += f"\n[yellow]{escape(problem)}[/]"
        elif not self.configs:
            info += (
                f"\n[red]No GPU config has arch {trace.trace_gpu_arch}; "
                "the server knows: "
                + ", ".join(sorted({c.arch for c in self.all_configs}))
                + ". `cascade configs add DIR` adds a config of your own.[/]"
            )
        self.query_one("#new-run-trace", Static).update(info)
        first = next((row.key for row in self.rows if row.count), None)
        self._fill_list(first)
        self.query_one("#configs", OptionList).focus()
        self.kernel_costs = []
        self.sampling_figures = []
        self._show_sampling()
        self._fetch_costs(trace.id)

    @on(OptionList.OptionSelected, "#configs")
    def _option_clicked(self, message: OptionList.OptionSelected) -> None:
        # Enter is the launch key (priority binding), so this comes from a mouse click: toggle
        # the clicked row, the cursor stays on it.
        self._toggle_highlighted()

    def action_other_trace(self, step: int) -> None:
        if not self.traces or self.trace is None:
            return
        ids = [t.id for t in self.traces]
        i = ids.index(self.trace.id) if self.trace.id in ids else 0
        self._select_trace(self.traces[(i + step) % len(self.traces)])

    def action_back(self) -> None:
        self.app.pop_screen()
