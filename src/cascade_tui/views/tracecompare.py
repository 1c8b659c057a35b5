"""Comparing the traces of one `sample_set` (issue 13): the same workload traced on GPUs of
different archs (tinyformer-step-sm70 against -sm75), each simulated on the configs of its arch.

For each trace its newest run with succeeded sims: per config the simulated total of each trace
side by side with the ratio, and per kernel (matched by demangled name and order, as the archs'
compilers may mangle or number them apart) the largest differences between the traces, sorted.

A sm_70 trace and a sm_75 trace never share a config, so a ratio needs a baseline: the first
trace on its reference config (the one it suggests, the GPU it was traced for, when its run
has it). A config two traces share (a set of one arch) compares them directly: last over first.
A trace whose run has stand-in numbers gets no ratio at all (its totals still show).
Pure (no Textual, no I/O); totals reuse the kernels view's maths (`compare`), so a number here is
the number that run's kernels view shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cascade_core.demangle import demangle
from cascade_core.models import RunSummary, TraceSummary

from . import compare
from .formatting import short_kernel_name, time_ns
from .runcompare import RunData
from .texttable import prose, table


@dataclass(frozen=True)
class TraceRun:
    """A trace of the set and its newest run with succeeded sims (None: it has none yet)."""

    trace: TraceSummary
    data: RunData | None


@dataclass(frozen=True)
class KernelDifference:
    name: str  # demangled
    occurrence: int  # 0 for its first launch in the trace, 1 for the second, ...
    values: tuple[float | None, ...]  # one per trace, in the order compared
    spread_pct: float  # compare.spread_pct over the traces that have it


def set_members(traces: Sequence[TraceSummary], sample_set: str) -> list[TraceSummary]:
    """The set's traces that can have runs (not the sample, not failed), by id (sm70, sm75)."""
    return sorted(
        (t for t in traces if t.sample_set == sample_set and not t.sample and t.state == "ready"),
        key=lambda t: t.id,
    )


def newest_runs_with_successes(trace_ids: Sequence[str], runs: Sequence[RunSummary]) -> dict[str, str]:
    """trace id -> the id of its newest run with at least one succeeded sim (`runs` newest
    first, as the API lists them); traces without one are left out."""
    chosen: dict[str, str] = {}
    for run in runs:
        if run.trace_id in trace_ids and run.trace_id not in chosen and run.sim_counts.get("succeeded"):
            chosen[run.trace_id] = run.id
    return chosen


def _totals(data: RunData) -> dict[str, float]:
    """Per config of the run, the median total over succeeded replicas (partial ones left out)."""
    sims = {s.id: s for s in data.run.sims}
    configs = compare.config_order((e.variant for e in data.run.entries), data.run.sims)
    return {
        t.config: t.median_ns
        for t in compare.config_totals(configs, sims, data.kernels)
        if t.median_ns is not None and not t.partial
    }


def reference_config(member: TraceRun) -> str | None:
    """The config a trace is compared on: its suggested one when its run has a total for it,
    else the first of the run's configs that has one."""
    if member.data is None:
        return None
    totals = _totals(member.data)
    if member.trace.suggested_sim_config in totals:
        return member.trace.suggested_sim_config
    return next(iter(totals), None)


def config_rows(members: Sequence[TraceRun]) -> list[tuple[str, tuple[float | None, ...], float | None]]:
    """Per config (in the traces' order): each trace's total and the ratio, the last trace that
    has the config over the first one that has it when two do, else over the baseline."""
    per_trace = [_totals(m.data) if m.data else {} for m in members]
    configs = list(dict.fromkeys(cfg for totals in per_trace for cfg in totals))
    base = baseline(members)
    rows = []
    for cfg in configs:
        values = tuple(totals.get(cfg) for totals in per_trace)
        have = [v for v in values if v is not None]
        if len(have) >= 2:
            ratio = have[-1] / have[0] if have[0] else None
        else:
            ratio = have[0] / base[1] if have and base is not None and base[1] else None
        rows.append((cfg, values, ratio))
    return rows


def baseline(members: Sequence[TraceRun]) -> tuple[str, float] | None:
    """(label, total) of the first trace with a run on its reference config."""
    for member in members:
        cfg = reference_config(member)
        if cfg is not None and member.data is not None:
            return f"{member.trace.id} on {cfg}", _totals(member.data)[cfg]
    return None


def kernel_times(member: TraceRun) -> dict[tuple[str, int], float]:
    """(demangled name, occurrence) -> median simulated time on the trace's reference config."""
    cfg = reference_config(member)
    if cfg is None or member.data is None:
        return {}
    sims = {s.id: s for s in member.data.run.sims if s.state == "succeeded"}
    seen: dict[str, int] = {}
    out: dict[tuple[str, int], float] = {}
    for row in compare.kernel_rows([cfg], sims, member.data.kernels):
        name = demangle(row.kernel_name)
        occurrence = seen.get(name, 0)
        seen[name] = occurrence + 1
        value = row.sim_ns.get(cfg)
        if value is not None:
            out[(name, occurrence)] = value
    return out


def kernel_differences(members: Sequence[TraceRun], limit: int = 20) -> list[KernelDifference]:
    """The kernels whose simulated time differs most between the traces (each on its reference
    config), largest first; only kernels at least two traces have."""
    per_trace = [kernel_times(m) for m in members]
    keys = list(dict.fromkeys(key for times in per_trace for key in times))
    out = []
    for name, occurrence in keys:
        values = tuple(times.get((name, occurrence)) for times in per_trace)
        spread = compare.spread_pct(values)
        if spread is not None:
            out.append(KernelDifference(name, occurrence, values, spread))
    out.sort(key=lambda d: (-d.spread_pct, d.name, d.occurrence))
    return out[:limit]


def lines(sample_set: str, members: Sequence[TraceRun], limit: int = 20, width: int = 100) -> list[str]:
    """The comparison as text lines fitted to `width` cells (the screen shows them as they are).
    When a trace's run has stand-in numbers, the totals side by side but no ratio and no kernel
    differences (as `runcompare` does): a replayed recording is not a simulation of that trace,
    so a ratio between the traces would measure nothing."""
    out = prose(
        f"Comparing the traces of sample set {sample_set!r}: the newest run with succeeded sims of each",
        width,
    ) + [""]
    for m in members:
        if m.data is None:
            out += prose(
                f"{m.trace.id}  {m.trace.trace_gpu_arch}  no run with succeeded sims yet "
                "(n on the trace starts one)",
                width,
                "  ",
            )
        else:
            out += prose(
                f"{m.trace.id}  {m.trace.trace_gpu_arch}  {m.data.run.id}  compared on "
                f"{reference_config(m) or '-'}",
                width,
                "  ",
            )
            if reason := compare.stand_in_reason(m.data.run, m.data.run.sims):
                out += prose(f"stand-in numbers ({reason}): a recording, not this trace", width, "    ")
    compared = [m for m in members if m.data is not None]
    if len(compared) < 2:
        out += ["", "Two traces of the set need a run with succeeded sims to be compared."]
        return out
    ids = [m.trace.id for m in compared]
    stand_in = [
        m.trace.id
        for m in compared
        if m.data is not None and compare.stand_in_reason(m.data.run, m.data.run.sims)
    ]
    if stand_in:
        out += [""] + prose(
            "Total simulated time per config (median over succeeded replicas). No "
            f"ratio and no kernel differences: {', '.join(stand_in)} "
            f"{'has' if len(stand_in) == 1 else 'have'} stand-in numbers, a "
            "recording replayed rather than a simulation of the trace, so a ratio "
            "would measure nothing.",
            width,
        )
        rows = [[cfg, *(time_ns(v) for v in values)] for cfg, values, _ in config_rows(compared)]
        return out + table(["config", *ids], rows, width)
    base = baseline(compared)
    out += [""] + prose("Total simulated time per config (median over succeeded replicas)", width)
    out += prose(
        "ratio: over "
        + (base[0] if base else "-")
        + "; on a config two traces share, the last over the first",
        width,
    )
    rows = [
        [cfg, *(time_ns(v) for v in values), f"{ratio:.3f}x" if ratio is not None else "-"]
        for cfg, values, ratio in config_rows(compared)
    ]
    out += table(["config", *ids, "ratio"], rows, width)
    out += [""] + prose(
        "Kernels that differ most between the traces, each on its compared config "
        f"(matched by name and order; largest spread first, top {limit}; ratio: "
        "last over first)",
        width,
    )
    diffs = kernel_differences(compared, limit)
    if not diffs:
        out.append("No kernel of one trace matches a kernel of another by name.")
        return out
    rows = []
    for d in diffs:
        nth = f" #{d.occurrence + 1}" if d.occurrence else ""
        have = [v for v in d.values if v is not None and v > 0]  # those spread_pct counted
        rows.append(
            [
                (short_kernel_name(d.name) or "?") + nth,
                *(time_ns(v) for v in d.values),
                f"{have[-1] / have[0]:.3f}x",
                f"{d.spread_pct:+.1f}%",
            ]
        )
    out += table(["kernel", *ids, "ratio", "spread"], rows, width)
    return out
