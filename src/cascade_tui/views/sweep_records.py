"""What a sweep adds to `cascade results` exports (JSON, CSV, the table): for each row's variant,
the config it modifies (`gpu_config`), the swept option (`option`) and its value
(`option_value`, a number when it is one; `value` is a stats line's own, in `--stats`), and its time as a multiple of the unmodified config's (`vs_base`), so a
script plots value against time without reading labels.

`option` and `option_value` name the option(s) whose value differs between the run's variants (an option
every variant sets alike is fixed, not swept): one option, as text and a number; several (a
`--sweep` cross product), as lists in the same order (CSV joins them with `;`). The unmodified
config's row has the config's own value of the option when the server says it
(`GET /api/gpu-configs/{name}/options`), else none. A run without variants gets none of this.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cascade_core.models import RunEntry
from cascade_core.variants import numeric

from .output import Column
from .sweep import Variant, is_sweep, swept_options, variants

# Config -> option -> the config's own value (`ConfigOption.value`), for the base's row.
ConfigValues = Mapping[str, Mapping[str, str]]


def _option_text(value: object) -> str:
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def _value_text(value: object) -> str:
    if isinstance(value, list):
        return ",".join(_value_text(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


# JSON and CSV only: the table's `config` column (the variant's name) already says them.
SWEEP_COLUMNS = (
    Column("gpu_config", "gpu config", in_table=False),
    Column("option", "option", _option_text, in_table=False),
    Column("option_value", "value", _value_text, right=True, in_table=False),
)
VS_BASE = Column("vs_base", "x base", lambda v: f"{v:.2f}x", right=True)


def _value(text: str | None) -> float | str | None:
    if text is None:
        return None
    number = numeric(text)
    return number if number is not None else text


@dataclass(frozen=True)
class SweepFields:
    """The variants of a sweep run and the options they sweep."""

    variants: dict[str, Variant]  # label -> variant
    swept: list[str]  # the swept options, by name
    config_values: ConfigValues

    def fields(self, label: str) -> dict[str, object]:
        """`gpu_config`, `option`, `option_value` for a row of the variant `label` (a label the run does
        not have: its config alone)."""
        variant = self.variants.get(label)
        if variant is None:
            return {"gpu_config": None, "option": None, "option_value": None}
        own = self.config_values.get(variant.gpu_config, {})
        values = [_value(variant.options.get(name, own.get(name))) for name in self.swept]
        if len(self.swept) == 1:
            return {"gpu_config": variant.gpu_config, "option": self.swept[0], "option_value": values[0]}
        return {"gpu_config": variant.gpu_config, "option": list(self.swept), "option_value": values}

    def base_of(self, label: str) -> str | None:
        """The label of the variant's unmodified config in this run; the base's own label for it."""
        variant = self.variants.get(label)
        if variant is None:
            return None
        return label if variant.is_baseline and self.is_base(label) else variant.baseline

    def is_base(self, label: str) -> bool:
        return any(v.baseline == label for v in self.variants.values())


def sweep_fields(
    entries: Sequence[RunEntry], config_values: ConfigValues | None = None
) -> SweepFields | None:
    """None for a run without variants: its exports stay as they were."""
    if not is_sweep(entries):
        return None
    run_variants = variants(entries)
    swept = swept_options(run_variants) or sorted({n for v in run_variants for n in v.options})
    return SweepFields({v.label: v for v in run_variants}, swept, config_values or {})


def vs_base(
    sweep: SweepFields, label: str, time: float | None, base_times: Mapping[str, float | None]
) -> float | None:
    """`time` over the time of `label`'s unmodified config (`base_times`: label -> time), or None
    without a base in the run or either time."""
    base = sweep.base_of(label)
    base_time = base_times.get(base) if base is not None else None
    return time / base_time if time is not None and base_time else None
