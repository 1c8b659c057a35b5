"""New run: a ready trace, the GPU configs of its arch (only the suggested one preselected), a count
per config (1..64), variants of a config (`a`: a simulator option and value, see
`variant_editor.py`) under it, shards per sim (`<` / `>`, with the expected speed-up and the
measured error); above 4 sims in total a confirmation listing the entries; launched once. The
rows' logic is pure, in `variant_form.py`."""

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

from cascade_core.models import (
    ConfigOption,
    GpuConfig,
    LauncherStatus,
    RunCreate,
    RunEntry,
    TraceSummary,
)
from cascade_core.shard_plan import MAX_SHARDS
from cascade_core.variants import VariantError

from ..connection.client_errors import ApiError
from ..messages import OpenRun, ReportsWorkerErrors
from ..services import Services
from ..views.capacity import start_plan
from ..views.formatting import human_bytes, plural
from ..views.shard_text import shards_note
from ..views.simulator import simulator_line
from ..views.variant_form import (
    FormRow,
    add_variant,
    entries_from_rows,
    initial_rows,
    remove_variant,
    row_text,
    set_count,
)
from .modals import ConfirmScreen
from .variant_editor import VariantRequest, VariantScreen

CONFIRM_ABOVE = 4  # sims in total; more asks first
LAUNCHER_POLL_SECONDS = 2.0  # how often the "start now / wait" line learns how busy the launcher is


def launchable(traces: list[TraceSummary]) -> list[TraceSummary]:
    return [t for t in traces if t.state == "ready" and not t.sample]


def total_text(entries: list[RunEntry]) -> str:
    """`2 configs, 2 sims in total`; with variants `1 config, 3 variants, 4 sims in total`; in
    shards `1 config, 3 sims in total (1 replica split into shards)`."""
    if not entries:
        return "Pick at least one config (space)."
    total = sims_of(entries)
    plain = sum(1 for e in entries if not e.options)
    variants = len(entries) - plain
    parts = ([plural(plain, "config")] if plain or not variants else []) + (
        [plural(variants, "variant")] if variants else []
    )
    replicas = sum(e.count for e in entries)
    sharded = f" ({plural(replicas, 'replica')} split into shards)" if total != replicas else ""
    return (
        ", ".join(parts)
        + f", {plural(total, 'sim')} in total{sharded}"
        + ("  (you will be asked to confirm)" if total > CONFIRM_ABOVE else "")
    )


def sims_of(entries: list[RunEntry]) -> int:
    """Sims in total: each replica is `shards` sims."""
    return sum(e.count * e.shards for e in entries)


class NewRunScreen(ReportsWorkerErrors, Screen):
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
        self.rows: list[FormRow] = []  # a row per config, its variants under it
        self.option_cache: dict[str, list[ConfigOption]] = {}  # a config's options, loaded once
        self.shards = 1  # sims per replica, each simulating a part of the trace
        self.kernel_costs: list[int | None] = []  # the trace's instructions per kernel, for the speed-up
        self.launching = False
        self.launched_run: str | None = None
        self.launcher: LauncherStatus | None = None  # None until the server says (or if it cannot)

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical():
            yield Static("loading traces and GPU configs…", id="new-run-trace")
            # Two lines, each whole at 80 columns (wrapped, `Enter:` was left apart from `launch`).
            yield Static(
                "space: pick   + / -: count   a: add a variant (option = value)   x: drop it\n"
                "[ / ]: other trace   Enter: launch   Esc: back",
                id="new-run-help",
            )
            yield OptionList(id="configs")
            yield Static("", id="new-run-shards")
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
        elif not self.configs:
            info += (
                f"\n[red]No GPU config has arch {trace.trace_gpu_arch}; "
                "the server knows: " + ", ".join(sorted({c.arch for c in self.all_configs})) + "[/]"
            )
        self.query_one("#new-run-trace", Static).update(info)
        first = next((row.key for row in self.rows if row.count), None)
        self._fill_list(first)
        self.query_one("#configs", OptionList).focus()
        self.kernel_costs = []
        self._fetch_costs(trace.id)

    def _fill_list(self, highlight: str | None) -> None:
        """The rows as the list's options, the cursor on `highlight` (a row key)."""
        options = self.query_one("#configs", OptionList)
        options.clear_options()
        options.add_options([Option(self._prompt(row), id=row.key) for row in self.rows])
        keys = [row.key for row in self.rows]
        if keys:
            options.highlighted = keys.index(highlight) if highlight in keys else 0
        self._update_total()

    @work(exclusive=True, group="costs", exit_on_error=False)
    async def _fetch_costs(self, trace_id: str) -> None:
        """The trace's instruction counts (its stats), which the expected speed-up weighs."""
        try:
            detail = await self.services.client.trace(trace_id)
        except ApiError:
            return
        if self.trace is not None and self.trace.id == trace_id:
            self.kernel_costs = [k.instructions for k in sorted(detail.kernels, key=lambda k: k.kernel_id)]
            self._show_shards()

    def _show_shards(self) -> None:
        trace = self.trace
        costs = self.kernel_costs or ([None] * trace.kernel_count if trace else [])
        slots = self.launcher.slots if self.launcher else None
        if self.shards == 1:
            text = "Shards per sim: [b]1[/]  (< / >: split a long trace over sims that run at once)"
        else:
            text = f"Shards per sim: [b]{self.shards}[/] (< / >)  " + escape(
                shards_note(costs, self.shards, 1, slots)
            )
        self.query_one("#new-run-shards", Static).update(text)

    def action_shards(self, delta: int) -> None:
        self.shards = max(1, min(MAX_SHARDS, self.shards + delta))
        self._update_total()

    def _entries(self) -> list[RunEntry]:
        """The rows as run entries, each replica in the chosen number of shards."""
        return [
            e.model_copy(update={"shards": self.shards}) if self.shards > 1 else e
            for e in entries_from_rows(self.rows)
        ]

    def _prompt(self, row: FormRow) -> Text:
        config = next((c for c in self.configs if c.name == row.gpu_config), None)
        suggested = bool(self.trace and row.gpu_config == self.trace.suggested_sim_config)
        return Text(
            row_text(
                row,
                config.arch if config else "",
                config.core_clock_mhz if config else None,
                suggested and not row.is_variant,
            ),
            style="bold" if row.count else "",
        )

    def _refresh_option(self, key: str) -> None:
        options = self.query_one("#configs", OptionList)
        row = next(r for r in self.rows if r.key == key)
        options.replace_option_prompt(key, self._prompt(row))
        self._update_total()

    def _update_total(self) -> None:
        self._show_shards()
        self.query_one("#new-run-total", Static).update(total_text(self._entries()))
        self._show_plan()

    def _show_plan(self) -> None:
        if self.launching or self.launched_run:
            return
        entries = self._entries()
        total = sims_of(entries)
        # The server refuses variants only where it starts the workers itself (local, Slurm):
        # those run the stand-in without Accel-Sim; a manual worker brings its own simulator.
        refused = self.launcher is not None and self.launcher.name != "manual"
        sim_line = simulator_line(
            self.launcher.simulator if self.launcher else None,
            variants=refused and any(e.options for e in entries),
        )
        plan = start_plan(self.launcher, total)
        self.query_one("#new-run-plan", Static).update("\n".join(t for t in (plan, sim_line) if t))

    def _highlighted_row(self) -> FormRow | None:
        options = self.query_one("#configs", OptionList)
        if options.highlighted is None or not self.rows:
            return None
        key = options.get_option_at_index(options.highlighted).id
        return next((row for row in self.rows if row.key == key), None)

    def action_toggle(self) -> None:  # type: ignore[override]  # not DOMNode's toggle(attribute)
        """Space: as marking on the Runs list, pick (or unpick) and move on to the next row."""
        options = self.query_one("#configs", OptionList)
        if self._toggle_highlighted() and (options.highlighted or 0) < options.option_count - 1:
            options.action_cursor_down()  # no wrapping round to the top, as on the Runs list

    def _toggle_highlighted(self) -> bool:
        row = self._highlighted_row()
        if row is None:
            return False
        self.rows = set_count(self.rows, row.key, 0 if row.count else 1)
        self._refresh_option(row.key)
        return True

    def action_change(self, delta: int) -> None:
        row = self._highlighted_row()
        if row is not None:
            self.rows = set_count(self.rows, row.key, row.count + delta)
            self._refresh_option(row.key)

    def action_add_variant(self) -> None:
        """`a`: a variant of the highlighted row's config, from the variant editor."""
        row = self._highlighted_row()
        if row is None:
            self.notify("No config to add a variant to.", severity="warning")
            return
        config = row.gpu_config

        def check(request: VariantRequest) -> str | None:
            try:
                add_variant(self.rows, config, request.options, request.label)
            except VariantError as exc:
                return str(exc)
            return None

        self.app.push_screen(
            VariantScreen(config, self.services, self.option_cache, check),
            partial(self._variant_made, config),
        )

    def _variant_made(self, config: str, request: VariantRequest | None) -> None:
        if request is None:
            return
        try:
            self.rows, added = add_variant(self.rows, config, request.options, request.label)
        except VariantError as exc:  # checked in the editor; the rows may have changed since
            self.notify(str(exc), title="Variant not added", severity="error", timeout=8)
            return
        self._fill_list(added.key)

    def action_remove_variant(self) -> None:
        row = self._highlighted_row()
        if row is None:
            return
        if not row.is_variant:
            self.notify(f"{row.gpu_config} is a config, not a variant: space unpicks it.", severity="warning")
            return
        index = self.rows.index(row)
        self.rows = remove_variant(self.rows, row.key)
        self._fill_list(self.rows[index - 1].key if index > 0 else None)

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

    def action_launch(self) -> None:
        if self.launching or self.launched_run:
            return
        trace = self.trace
        entries = self._entries()
        if trace is None or trace.state != "ready" or trace.sample:
            self.notify("This trace cannot start a run.", severity="error")
            return
        if not entries:
            self.notify("Pick at least one config (space).", severity="warning")
            return
        total = sims_of(entries)
        body = RunCreate(trace_id=trace.id, entries=entries)
        if total > CONFIRM_ABOVE:
            listing = "\n".join(
                f"  {e.variant:<22} × {e.count}" + (f" in {e.shards} shards" if e.shards > 1 else "")
                for e in entries
            )
            self.app.push_screen(
                ConfirmScreen(
                    f"Launch {plural(total, 'sim')}?",
                    f"Trace {trace.id}\n{listing}\n\n{plural(total, 'sim')} in total.",
                    "launch",
                    "go back",
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
