"""The New run form's rows: a config, or a variant of it (simulator options and a label), each with
a count; and finding a config's options as you type. Pure (no Textual, no I/O), tested on its own.

A config's variants sit right under it. The rules for names, values and labels are the server's
(`cascade_core.variants`), checked here first so a typo is said at once; the server
checks again on launch (its 422 also names the option).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from cascade_core.models import MAX_ENTRY_COUNT, ConfigOption, GpuConfig, RunEntry, TraceSummary
from cascade_core.quoting import quoted
from cascade_core.variants import (
    VariantError,
    canonical_name,
    default_label,
    label_problem,
    normalize_options,
    options_key,
)

MAX_MATCHES = 200  # options listed under the option field; a config has about 500


@dataclass(frozen=True)
class FormRow:
    gpu_config: str
    options: dict[str, str] = field(default_factory=dict)
    label: str | None = None  # as typed; None: the API's default (`default_label`)
    count: int = 0

    @property
    def is_variant(self) -> bool:
        return bool(self.options)

    @property
    def variant(self) -> str:
        """The label the run will show: the typed one or the API's default."""
        return self.label or default_label(self.gpu_config, self.options)

    @property
    def key(self) -> str:
        """A stable id for the row (an OptionList option id): the config, or config + options."""
        if not self.options:
            return self.gpu_config
        return self.gpu_config + "|" + ",".join(f"{k}={v}" for k, v in sorted(self.options.items()))

    def entry(self) -> RunEntry:
        return RunEntry(
            gpu_config=self.gpu_config, count=self.count, options=dict(self.options), label=self.label
        )


def initial_rows(trace: TraceSummary, configs: Sequence[GpuConfig]) -> list[FormRow]:
    """One row per config: the trace's suggested config at 1, the others at 0, so `n` then Enter
    runs what the Traces note names (`n: run on SM7_QV100`). A trace that suggests none (or one its
    arch lacks) starts with nothing picked, unless its arch has a single config: the note says
    `pick configs`, and nobody launches every config by pressing Enter twice."""
    names = [c.name for c in configs]
    chosen = trace.suggested_sim_config if trace.suggested_sim_config in names else None
    if chosen is None and len(names) == 1:
        chosen = names[0]
    return [FormRow(name, count=1 if name == chosen else 0) for name in names]


def entries_from_rows(rows: Sequence[FormRow]) -> list[RunEntry]:
    return [row.entry() for row in rows if row.count > 0]


def set_count(rows: Sequence[FormRow], key: str, count: int) -> list[FormRow]:
    count = max(0, min(MAX_ENTRY_COUNT, count))
    return [replace(row, count=count) if row.key == key else row for row in rows]


def add_variant(
    rows: Sequence[FormRow], gpu_config: str, options: dict[str, str], label: str | None = None
) -> tuple[list[FormRow], FormRow]:
    """The rows with a new variant of `gpu_config` (count 1) after that config's last row; raises
    VariantError with the reason the API would give (no options, a bad name or value, the same
    options as another row of the config, a label another row has)."""
    if not any(row.gpu_config == gpu_config for row in rows):
        raise VariantError(f"{gpu_config} is not a config of this trace's arch")
    normalized = normalize_options(options)
    if not normalized:
        raise VariantError("a variant needs an option and a value, such as -gpgpu_n_clusters 40")
    label = (label or "").strip() or None
    if label is not None and (problem := label_problem(label)):
        raise VariantError(problem)
    new = FormRow(gpu_config, normalized, label, count=1)
    for row in rows:
        if options_key(row.gpu_config, row.options) == options_key(gpu_config, normalized):
            raise VariantError(f"{row.variant} already has these options: raise its count instead")
        if row.variant == new.variant:
            raise VariantError(
                f"another row is labelled {quoted(new.variant)}: give this variant another label"
            )
    last = max(i for i, row in enumerate(rows) if row.gpu_config == gpu_config)
    out = list(rows)
    out.insert(last + 1, new)
    return out, new


def remove_variant(rows: Sequence[FormRow], key: str) -> list[FormRow]:
    """The rows without the variant `key` (a config's own row stays: unpick it instead)."""
    return [row for row in rows if not (row.key == key and row.is_variant)]


def option_matches(
    options: Sequence[ConfigOption], typed: str, limit: int = MAX_MATCHES
) -> list[ConfigOption]:
    """The options whose name holds what was typed (the dash optional, any case): names that start
    with it first, then the config's own options (`in_config`), then by name."""
    text = typed.strip().lower()
    if not text:
        return sorted(options, key=lambda o: (not o.in_config, o.name))[:limit]
    bare = text.lstrip("-")
    hits = [o for o in options if bare in o.name.lower()]
    hits.sort(key=lambda o: (not o.name.lower().lstrip("-").startswith(bare), not o.in_config, o.name))
    return hits[:limit]


def completion(names: Sequence[str], typed: str) -> str | None:
    """What the option field suggests for `typed`: the first name (in `names`' order) that starts
    with it, spelled as typed (with or without the leading dash), or None."""
    if not typed:
        return None
    low = typed.lower()
    for name in names:
        spelled = name if typed.startswith("-") else name.lstrip("-")
        if spelled.lower().startswith(low) and len(spelled) > len(typed):
            return typed + spelled[len(typed) :]
    return None


def find_option(options: Sequence[ConfigOption], typed: str) -> ConfigOption | None:
    name = canonical_name(typed) if typed.strip() else ""
    return next((o for o in options if o.name == name), None)


def row_text(row: FormRow, arch: str = "", clock_mhz: float | None = None, suggested: bool = False) -> str:
    """A row of the list: `[x] SM7_QV100   sm_70   1132 MHz  × 1  (suggested)` for a config,
    `      + gpgpu_n_clusters=40  × 1   SM7_QV100[gpgpu_n_clusters=40]` for a variant."""
    mark = "[x]" if row.count else "[ ]"
    count = f"× {row.count}" if row.count else "   "
    if row.is_variant:
        opts = " ".join(f"{k.lstrip('-')}={v}" for k, v in row.options.items())
        label = f"  {row.label}" if row.label else ""
        return f"{mark}   + {opts}  {count}{label}"
    clock = f"{clock_mhz:>7.0f} MHz" if clock_mhz is not None else ""
    return f"{mark} {row.gpu_config:<20} {arch:<6} {clock}  {count}" + ("  (suggested)" if suggested else "")
