"""Comparing runs (issue 13): per config the simulated total of each run side by side with the
ratio to the first run, and the kernels whose simulated time differs most between runs.

Pure (no Textual, no I/O): the compare screen fetches each run's detail and kernels and renders
these lines. Totals reuse the kernels view's maths (`compare.config_totals`: median over succeeded
replicas), so a number here is the number that run's kernels view shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cascade_core.models import KernelStat, RunDetail

from . import compare
from .formatting import short_kernel_name, time_ns
from .power import joules, watts
from .texttable import prose, table


@dataclass(frozen=True)
class RunData:
    run: RunDetail
    kernels: list[KernelStat]


@dataclass(frozen=True)
class KernelDifference:
    kernel_index: int
    kernel_name: str
    config: str
    values: tuple[float | None, ...]  # one per run, in the order compared
    spread_pct: float  # compare.spread_pct over the runs that have it


def _configs(runs: Sequence[RunData]) -> list[str]:
    configs: list[str] = []
    for data in runs:
        for name in compare.config_order((e.variant for e in data.run.entries), data.run.sims):
            if name not in configs:
                configs.append(name)
    return configs


def config_totals(runs: Sequence[RunData]) -> list[tuple[str, tuple[float | None, ...]]]:
    """Per config, each run's total simulated time (None: no succeeded replica in that run)."""
    configs = _configs(runs)
    per_run = []
    for data in runs:
        sims = {s.id: s for s in data.run.sims}
        totals = {
            t.config: (None if t.partial else t.median_ns)
            for t in compare.config_totals(configs, sims, data.kernels)
        }
        per_run.append(totals)
    return [(cfg, tuple(totals.get(cfg) for totals in per_run)) for cfg in configs]


def config_energies(runs: Sequence[RunData]) -> list[tuple[str, tuple[compare.ConfigTotal | None, ...]]]:
    """Per config, each run's totals where that run simulated its power (None: not in that run,
    or no power there); only configs some run has power for."""
    configs = _configs(runs)
    per_run = []
    for data in runs:
        sims = {s.id: s for s in data.run.sims}
        per_run.append({t.config: t for t in compare.config_totals(configs, sims, data.kernels) if t.power})
    return [
        (cfg, tuple(totals.get(cfg) for totals in per_run))
        for cfg in configs
        if any(cfg in t for t in per_run)
    ]


def energy_cell(total: compare.ConfigTotal | None) -> str:
    """`1.23 mJ 57.3 W`: a config's energy and average power in one run; `-` without, or with
    no succeeded replica (as its time: part of a run is not the whole trace's)."""
    if total is None or total.partial or total.energy_j is None:
        return "-"
    return joules(total.energy_j) + (f" {watts(total.power_w)}" if total.power_w is not None else "")


def _energy_lines(runs: Sequence[RunData], ids: list[str], width: int) -> list[str]:
    """A power run's energy per config beside the others' (AccelWattch), with the ratio of the
    energies; nothing when no run has power."""
    energies = config_energies(runs)
    if not energies:
        return []
    out = [""] + prose(
        "Energy and average power per config (AccelWattch, the kernels with power; median over "
        "succeeded replicas); ratio: last run's energy / first's",
        width,
    )
    rows = []
    for cfg, totals in energies:
        r = ratio([t.energy_j if t is not None and not t.partial else None for t in totals])
        rows.append([cfg, *(energy_cell(t) for t in totals), f"{r:.3f}x" if r is not None else "-"])
    return out + table(["config", *ids, "ratio"], rows, width)


def ratio(values: Sequence[float | None]) -> float | None:
    """The last run's value over the first's (both needed)."""
    first, last = values[0], values[-1]
    return last / first if first and last is not None else None


def kernel_differences(runs: Sequence[RunData], limit: int = 20) -> list[KernelDifference]:
    """The (kernel, config) pairs whose simulated time differs most between the runs, largest
    first; only pairs at least two runs have."""
    configs = _configs(runs)
    per_run = []
    for data in runs:
        sims = {s.id: s for s in data.run.sims}
        per_run.append(
            {
                (row.kernel_index, row.kernel_name): row.sim_ns
                for row in compare.kernel_rows(configs, sims, data.kernels)
            }
        )
    keys: list[tuple[int, str]] = []
    for rows in per_run:
        keys.extend(k for k in rows if k not in keys)
    out = []
    for key in keys:
        for cfg in configs:
            values = tuple(rows.get(key, {}).get(cfg) for rows in per_run)
            spread = compare.spread_pct(values)
            if spread is not None:
                out.append(KernelDifference(key[0], key[1], cfg, values, spread))
    out.sort(key=lambda d: (-d.spread_pct, d.kernel_index, d.config))
    return out[:limit]


def stand_in_reasons(runs: Sequence[RunData]) -> dict[str, str]:
    """Run id -> why its numbers are the stand-in's (only the runs whose numbers are)."""
    reasons = {data.run.id: compare.stand_in_reason(data.run, data.run.sims) for data in runs}
    return {run_id: reason for run_id, reason in reasons.items() if reason}


def lines(runs: Sequence[RunData], limit: int = 20, width: int = 100) -> list[str]:
    """The comparison as text lines fitted to `width` cells (the screen shows them as they are).
    With stand-in numbers in any run there is no ratio and no spread: they would compare
    placeholders (the screen's banner says why)."""
    ids = [data.run.id for data in runs]
    if stand_in := stand_in_reasons(runs):
        return _stand_in_lines(runs, ids, sorted(stand_in), width)
    out = prose(
        f"Comparing {len(runs)} runs: " + ", ".join(f"{data.run.id} ({data.run.trace_id})" for data in runs),
        width,
    )
    out += [""] + prose(
        "Total simulated time per config (median over succeeded replicas); ratio: last run / first", width
    )
    rows = []
    for cfg, values in config_totals(runs):
        r = ratio(values)
        rows.append([cfg, *(time_ns(v) for v in values), f"{r:.3f}x" if r is not None else "-"])
    out += table(["config", *ids, "ratio"], rows, width)
    out += _energy_lines(runs, ids, width)
    out += [""] + prose(
        f"Kernels that differ most between the runs (largest spread first, top {limit})", width
    )
    diffs = kernel_differences(runs, limit)
    if not diffs:
        out.append("No kernel finished in two of these runs on the same config.")
        return out
    rows = [
        [
            f"#{d.kernel_index:<3} {short_kernel_name(d.kernel_name) or '?'}",
            d.config,
            *(time_ns(v) for v in d.values),
            f"{d.spread_pct:+.1f}%",
        ]
        for d in diffs
    ]
    out += table(["kernel", "config", *ids, "spread"], rows, width, left=2)
    return out


def _stand_in_lines(runs: Sequence[RunData], ids: list[str], stand_in: list[str], width: int) -> list[str]:
    """The totals side by side, no ratio and no kernel differences."""
    out = prose(
        f"Comparing {len(runs)} runs: " + ", ".join(f"{data.run.id} ({data.run.trace_id})" for data in runs),
        width,
    )
    out += [""] + prose(
        "Total simulated time per config (median over succeeded replicas). No "
        f"ratio and no kernel differences: {', '.join(stand_in)} "
        f"{'has' if len(stand_in) == 1 else 'have'} stand-in numbers.",
        width,
    )
    rows = [[cfg, *(time_ns(v) for v in values)] for cfg, values in config_totals(runs)]
    return out + table(["config", *ids], rows, width)
