"""Reading a sweep in the kernels view: a run whose entries carry simulator options (variants).

Each variant is compared with its baseline, the unmodified config in the same run (when the run
has it); variants get short names that say what differs (`gpgpu_n_clusters=40`, not the whole
label cut at the column); and for a sweep of one numeric option, the series the chart draws:
total simulated time against the option's value, one line per config. Pure (no Textual, no
I/O), so it is tested on its own.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cascade_core.models import RunEntry, SimSummary
from cascade_core.variants import default_label, numeric

from .compare import ConfigTotal, Ranking


@dataclass(frozen=True)
class Variant:
    label: str
    gpu_config: str
    options: dict[str, str]
    baseline: str | None  # the label of the same config unmodified in this run; None for it, or none there

    @property
    def is_baseline(self) -> bool:
        return not self.options


def variants(entries: Sequence[RunEntry]) -> list[Variant]:
    """The run's variants in entry order, each with its baseline (the config without options)."""
    plain = {e.gpu_config: e.variant for e in entries if not e.options}
    return [
        Variant(
            e.label or default_label(e.gpu_config, e.options),
            e.gpu_config,
            dict(e.options),
            plain.get(e.gpu_config) if e.options else None,
        )
        for e in entries
    ]


def is_sweep(entries: Sequence[RunEntry]) -> bool:
    return any(e.options for e in entries)


def baseline_multiples(run_variants: Sequence[Variant], totals: Sequence[ConfigTotal]) -> dict[str, float]:
    """label -> its total over its baseline's total, for variants with a baseline where both have
    a whole total (a succeeded replica; partial totals compare nothing)."""
    whole = {t.config: t.median_ns for t in totals if t.median_ns and not t.partial}
    out: dict[str, float] = {}
    for v in run_variants:
        if v.baseline is not None and v.label in whole and v.baseline in whole:
            out[v.label] = whole[v.label] / whole[v.baseline]
    return out


def kernel_multiple(variant: Variant, sim_ns: Mapping[str, float | None]) -> float | None:
    """One kernel's simulated time on `variant` over its time on the baseline."""
    if variant.baseline is None:
        return None
    value, base = sim_ns.get(variant.label), sim_ns.get(variant.baseline)
    return value / base if value is not None and base else None


def swept_options(run_variants: Sequence[Variant]) -> list[str]:
    """The options whose value differs between the variants that have options (an option a variant
    lacks differs), by name; options every variant sets alike are fixed, not swept."""
    modified = [v for v in run_variants if v.options]
    names = sorted({name for v in modified for name in v.options})
    return [n for n in names if len({v.options.get(n) for v in modified}) > 1]


def short_names(run_variants: Sequence[Variant]) -> dict[str, str]:
    """label -> a name that fits a column: a label someone typed stays; a config's own row is the
    config; a variant with the default label is the options that differ (`gpgpu_n_clusters=40`),
    after the config when the run has several. Labels whole when the short names would clash."""
    swept = set(swept_options(run_variants))
    configs = {v.gpu_config for v in run_variants}
    names: dict[str, str] = {}
    for v in run_variants:
        if not v.options or v.label != default_label(v.gpu_config, v.options):
            names[v.label] = v.label
            continue
        shown = {k: val for k, val in v.options.items() if k in swept} or v.options
        text = ",".join(f"{k.lstrip('-')}={val}" for k, val in sorted(shown.items()))
        names[v.label] = f"{v.gpu_config} {text}" if len(configs) > 1 else text
    if len(set(names.values())) < len(names):
        return {v.label: v.label for v in run_variants}
    return names


def sim_names(sims: Iterable[SimSummary]) -> dict[str, str]:
    """label -> its short name (`short_names`) for the variants these sims run: what the sims
    table and the log title call a sim, so variants of one config differ within 80 columns."""
    # Called on every render tick (the sims table, the log title): one pass that builds nothing
    # for a label already seen, and the names worked out once per set of variants.
    seen: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {}
    for sim in sims:
        if sim.label not in seen:
            seen[sim.label] = (sim.gpu_config, tuple(sim.options.items()))
    return dict(_names_of(tuple(seen.items())))


@functools.lru_cache(maxsize=64)
def _names_of(
    seen: tuple[tuple[str, tuple[str, tuple[tuple[str, str], ...]]], ...],
) -> tuple[tuple[str, str], ...]:
    variants = [Variant(label, config, dict(options), None) for label, (config, options) in seen]
    return tuple(short_names(variants).items())


def sim_name(sim: SimSummary, run_sims: Iterable[SimSummary]) -> str:
    """One sim in words: its variant's short name, replica and shard (`gpgpu_n_clusters=4 #0`,
    `SM7_QV100 #1 shard 2/3`)."""
    shard = f" shard {sim.shard.index + 1}/{sim.shard.count}" if sim.shard is not None else ""
    return f"{sim_names(run_sims).get(sim.label, sim.label)} #{sim.replica}{shard}"


def swept_value_order(run_variants: Sequence[Variant]) -> list[str]:
    """The variants' labels to read a figure against the swept value (the energy of a power
    sweep): by config in entry order, its unmodified config first, then by the value of the one
    swept option (a value that is no number after the numbers); entry order when the run sweeps
    more than one option."""
    swept = swept_options(run_variants)
    if len(swept) != 1:
        return [v.label for v in run_variants]
    configs = list(dict.fromkeys(v.gpu_config for v in run_variants))

    def key(item: tuple[int, Variant]) -> tuple[int, bool, float, int]:
        position, v = item
        value = numeric(v.options.get(swept[0], "")) if v.options else None
        return (configs.index(v.gpu_config), bool(v.options), math.inf if value is None else value, position)

    return [v.label for _, v in sorted(enumerate(run_variants), key=key)]


@dataclass(frozen=True)
class SeriesLine:
    gpu_config: str
    points: list[tuple[float, float]] = field(default_factory=list)  # (value, total ns), by value
    baseline_ns: float | None = None  # the unmodified config's total, when the run has it


@dataclass(frozen=True)
class SweepSeries:
    option: str
    lines: list[SeriesLine]

    @property
    def max_ns(self) -> float:
        values = [ns for line in self.lines for _, ns in line.points]
        values += [line.baseline_ns for line in self.lines if line.baseline_ns]
        return max(values, default=0.0)


def sweep_series(run_variants: Sequence[Variant], totals: Sequence[ConfigTotal]) -> SweepSeries | None:
    """Total simulated time against the swept value, per config: only for a sweep of one option
    whose values are all numbers over at least two values; a variant's point shows once it has a
    whole total (so the lines grow as sims succeed). None when there is no such sweep."""
    swept = swept_options(run_variants)
    if len(swept) != 1:
        return None
    option = swept[0]
    modified = [v for v in run_variants if v.options]
    values = [numeric(v.options.get(option, "")) for v in modified]
    if any(x is None for x in values) or len(set(values)) < 2:
        return None
    whole = {t.config: t.median_ns for t in totals if t.median_ns and not t.partial}
    lines = []
    for config in dict.fromkeys(v.gpu_config for v in run_variants):
        points = sorted(
            (float(v.options[option]), whole[v.label])
            for v in modified
            if v.gpu_config == config and v.label in whole
        )
        base = next(
            (whole.get(v.label) for v in run_variants if v.gpu_config == config and v.is_baseline), None
        )
        if any(v.gpu_config == config for v in modified):
            lines.append(SeriesLine(config, points, base))
    return SweepSeries(option, lines)


def y_limits(
    series: SweepSeries, divisor: float, canvas_rows: int, legend_rows: int
) -> tuple[float, float] | None:
    """The y axis's limits (in `divisor` units) that keep every point below the legend plotext
    writes over the top `legend_rows` rows of a canvas `canvas_rows` high (its top-left corner,
    where a sweep's slowest point usually is); None when the canvas has no room for both."""
    values = [ns / divisor for line in series.lines for _, ns in line.points]
    values += [line.baseline_ns / divisor for line in series.lines if line.baseline_ns]
    if not values:
        return None
    low, high = min(values), max(values)
    if high <= low:
        low, high = low * 0.9, (high * 1.1) or 1.0
    free = canvas_rows - 1 - legend_rows  # rows (after the bottom one) the points may use
    if free < 1:
        return None
    return low, low + (high - low) * (canvas_rows - 1) / free


def time_scale(max_ns: float) -> tuple[float, str]:
    """The divisor and unit that make `max_ns` read best on an axis."""
    for divisor, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if max_ns >= divisor:
            return divisor, unit
    return 1.0, "ns"


def display_ranking(ranking: Ranking, names: Mapping[str, str], based: Collection[str] = ()) -> Ranking:
    """The ranking with the variants' short names, for the sentence under the totals; the variants
    in `based` (a multiple of their base already on their line) are not repeated as multiples of
    the fastest."""

    def name(label: str) -> str:
        return names.get(label, label)

    return Ranking(
        fastest=tuple(name(c) for c in ranking.fastest),
        multiples={name(c): m for c, m in ranking.multiples.items() if c not in based},
        missing=tuple(name(c) for c in ranking.missing),
        waiting=tuple(name(c) for c in ranking.waiting),
        held=tuple(name(c) for c in ranking.held),
    )


def baseline_note(run_variants: Sequence[Variant], names: Mapping[str, str]) -> str:
    """Under the totals: what the multiples are of."""
    bases = list(dict.fromkeys(names.get(v.baseline, v.baseline) for v in run_variants if v.baseline))
    lacking = list(dict.fromkeys(v.gpu_config for v in run_variants if v.options and v.baseline is None))
    parts = []
    if bases:
        parts.append(f"Variants as a multiple of their unmodified config (base): {', '.join(bases)}.")
    if lacking:
        parts.append(
            f"No unmodified {', '.join(lacking)} in this run: "
            f"{'its variants are' if len(lacking) == 1 else 'their variants are'} "
            "a multiple of the fastest."
        )
    return " ".join(parts)


@dataclass(frozen=True)
class SweepView:
    """What the kernels view needs to show a sweep run: its variants, their short names and
    multiples of their baselines."""

    variants: list[Variant]
    names: dict[str, str]
    multiples: dict[str, float]

    def variant(self, label: str) -> Variant | None:
        return next((v for v in self.variants if v.label == label), None)

    @property
    def baselines(self) -> set[str]:
        return {v.baseline for v in self.variants if v.baseline is not None}


def sweep_view(entries: Sequence[RunEntry], totals: Sequence[ConfigTotal]) -> SweepView | None:
    """None for a run without variants: its view stays as it was."""
    if not is_sweep(entries):
        return None
    run_variants = variants(entries)
    return SweepView(run_variants, short_names(run_variants), baseline_multiples(run_variants, totals))


def sweep_sentence(ranking: Ranking, names: Mapping[str, str], based: Collection[str], finished: bool) -> str:
    """The ranking in words with the variants' short names, the multiples of the fastest only for
    the variants without a base (the others have theirs on their line)."""
    if not ranking.fastest or len(ranking.multiples) + len(ranking.missing) == 1:
        return display_ranking(ranking, names).sentence(finished)
    shown = display_ranking(ranking, names, based)
    head = (
        " and ".join(shown.fastest) + " tie for fastest (within 1%)."
        if len(shown.fastest) > 1
        else f"{shown.fastest[0]} is fastest."
    )
    others = [f"{c} {m:.2f}x" for c, m in shown.multiples.items() if c not in shown.fastest]
    return " ".join(
        [head]
        + ([f"Others: {', '.join(others)}."] if others else [])
        + ([f"No succeeded replica: {', '.join(shown.missing)}."] if shown.missing else [])
    )
