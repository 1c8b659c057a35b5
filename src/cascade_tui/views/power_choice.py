"""The New run form's power choice (`w`, issue 34): what simulating power costs, which picked
configs have no AccelWattch model, and the run entries with `power` where it applies. Pure (no
Textual, no I/O), tested on its own.

Power applies per config: a picked config without a model (`GpuConfig.power_model` false, which
the server refuses power for with a 422) runs without it, and the form says so as the choice is
made, so one run can still compare it with configs that have power."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from cascade_core.models import GpuConfig, RunEntry

from .power import COST

OFF_LINE = f"Power: off  (w: AccelWattch per kernel, {COST})"
ON_LINE = f"Power: on (w)  AccelWattch per kernel, {COST}"


def with_model(configs: Sequence[GpuConfig]) -> set[str]:
    return {c.name for c in configs if c.power_model}


def without_model(picked: Iterable[str], configs: Sequence[GpuConfig]) -> list[str]:
    """The picked configs (names, each once, in order) that have no power model."""
    have = with_model(configs)
    return [name for name in dict.fromkeys(picked) if name not in have]


def power_lines(on: bool, picked: Sequence[str], configs: Sequence[GpuConfig]) -> list[str]:
    """The form's power line (each within 80 columns but for long config names): off with what
    `w` does and costs; on with its cost, then which picked configs run without power."""
    if not on:
        return [OFF_LINE]
    lines = [ON_LINE]
    lacking = without_model(picked, configs)
    if lacking and len(lacking) == len(set(picked)):
        lines.append("  no picked config has a power model: this run would have no power")
    elif lacking:
        lines.append(f"  without power (no model): {', '.join(lacking)}")
    return lines


def toggle_notice(picked: Sequence[str], configs: Sequence[GpuConfig]) -> str | None:
    """What turning power on says when a picked config has no model (None when all have one)."""
    lacking = without_model(picked, configs)
    if not lacking:
        return None
    have = sorted(with_model(configs))
    which = f"Configs with one: {', '.join(have)}." if have else "No config of this trace's arch has one."
    names = ", ".join(lacking)
    verb = "has" if len(lacking) == 1 else "have"
    return f"{names} {verb} no AccelWattch power model: {'it runs' if len(lacking) == 1 else 'they run'} without power. {which}"


def with_power(entries: Sequence[RunEntry], configs: Sequence[GpuConfig]) -> list[RunEntry]:
    """`entries` with `power` on those whose config has a model (the others as they are)."""
    have = with_model(configs)
    return [e.model_copy(update={"power": True}) if e.gpu_config in have else e for e in entries]
