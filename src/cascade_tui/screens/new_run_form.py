"""What the new-run form's parts share: the state `NewRunScreen` sets up, which the config list
(`new_run_configs.py`), its variants (`new_run_variants.py`), the lines under it
(`new_run_plan.py`) and the launch (`new_run_launch.py`) read and change."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.screen import Screen

from cascade_core.models import ConfigOption, GpuConfig, LauncherStatus, SamplingInfo, TraceSummary

from ..services import Services
from ..views.variant_form import FormRow

# Plain mixins at run time, as `messages.ReportsWorkerErrors` (a DOMNode base placed before
# Screen changes how Textual resolves its default CSS). Textual reads bindings, default CSS and
# `@on` handlers only from DOMNode classes, so those stay on `NewRunScreen`.
if TYPE_CHECKING:
    _Screen = Screen
else:
    _Screen = object


class NewRunForm(_Screen):
    services: Services
    trace: TraceSummary | None
    traces: list[TraceSummary]
    all_configs: list[GpuConfig]
    configs: list[GpuConfig]
    rows: list[FormRow]  # a row per config, its variants under it
    option_cache: dict[str, list[ConfigOption]]  # a config's options, loaded once
    shards: int  # sims per replica, each simulating a part of the trace
    sampling: str  # "none", "identical" or "stratified" (issue 33)
    sampling_figures: list[SamplingInfo]  # what each method would simulate of the trace
    power: bool  # AccelWattch (issue 34), on the picked configs that have a power model
    kernel_costs: list[int | None]  # the trace's instructions per kernel, for the speed-up
    launching: bool
    launched_run: str | None
    launcher: LauncherStatus | None  # None until the server says (or if it cannot)
