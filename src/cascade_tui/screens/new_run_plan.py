"""The new-run form's lines under the config list: shards per sim (`<` / `>`, with the expected
speed-up and the measured error), sampling (`m`), power (`w`), the total of sims, and the start
plan (how many start now, given how busy the launcher is) with the simulator line."""

from __future__ import annotations

from rich.markup import escape
from textual import work
from textual.widgets import Static

from cascade_core.models import RunEntry
from cascade_core.shard_plan import MAX_SHARDS

from ..connection.client_errors import ApiError
from ..views.capacity import start_plan
from ..views.formatting import plural
from ..views.power_choice import power_lines, toggle_notice, with_power
from ..views.sampling import sampling_text
from ..views.shard_text import shards_note
from ..views.simulator import simulator_line
from ..views.variant_form import entries_from_rows
from .new_run_form import NewRunForm

CONFIRM_ABOVE = 4  # sims in total; more asks first


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


class PlanLines(NewRunForm):
    @work(exclusive=True, group="launcher", exit_on_error=False)
    async def _fetch_launcher(self) -> None:
        try:
            self.launcher = await self.services.client.launcher()
        except ApiError:
            self.launcher = None  # an older server without the route: the form works without it
        self._show_plan()

    @work(exclusive=True, group="costs", exit_on_error=False)
    async def _fetch_costs(self, trace_id: str) -> None:
        """The trace's instruction counts (its stats), which the expected speed-up weighs."""
        try:
            detail = await self.services.client.trace(trace_id)
        except ApiError:
            return
        if self.trace is not None and self.trace.id == trace_id:
            self.kernel_costs = [k.instructions for k in sorted(detail.kernels, key=lambda k: k.kernel_id)]
            self.sampling_figures = list(detail.sampling)
            self._show_shards()
            self._show_sampling()

    def _show_sampling(self) -> None:
        """What the sampling method picked would simulate of the trace, before the launch."""
        figures = next((f for f in self.sampling_figures if f.method == self.sampling), None)
        if self.sampling == "none":
            text = "Sampling: [b]none[/]  (m: simulate representative kernels, estimate the rest)"
        elif figures is None:
            text = f"Sampling: [b]{self.sampling}[/] (m)  the trace's kernels are not known yet"
        else:
            text = f"Sampling: [b]{self.sampling}[/] (m)  " + escape(sampling_text(figures).split(": ", 1)[1])
        self.query_one("#new-run-sampling", Static).update(text)

    def action_sampling(self) -> None:
        methods = ("none", "identical", "stratified")
        self.sampling = methods[(methods.index(self.sampling) + 1) % len(methods)]
        self._update_total()

    def _show_power(self) -> None:
        """Power off or on, what it costs, and the picked configs it cannot apply to."""
        picked = [e.gpu_config for e in entries_from_rows(self.rows)]
        self.query_one("#new-run-power", Static).update(
            "\n".join(power_lines(self.power, picked, self.configs))
        )

    def action_power(self) -> None:
        self.power = not self.power
        if self.power:  # said once, as it is turned on: the line under the list keeps saying it
            picked = [e.gpu_config for e in entries_from_rows(self.rows)]
            if notice := toggle_notice(picked, self.configs):
                self.notify(notice, title="Power", severity="warning")
        self._update_total()

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
        """The rows as run entries, each replica in the chosen number of shards, sampled as chosen,
        with power on the configs that have a power model when it is on."""
        entries = [
            e.model_copy(update={"shards": self.shards}) if self.shards > 1 else e
            for e in entries_from_rows(self.rows)
        ]
        if self.sampling != "none":
            entries = [e.model_copy(update={"sampling": self.sampling}) for e in entries]
        if self.power:
            entries = with_power(entries, self.configs)
        return entries

    def _update_total(self) -> None:
        self._show_shards()
        self._show_sampling()
        self._show_power()
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
            power=refused and any(e.power for e in entries),
        )
        plan = start_plan(self.launcher, total)
        self.query_one("#new-run-plan", Static).update("\n".join(t for t in (plan, sim_line) if t))
