"""Kernel sampling: which kernels of a trace to simulate, and whose numbers every other kernel
takes. Pure: per-kernel facts in, groups out.

A training or decode step runs the same kernels again and again. Two methods, both from what the
trace itself holds (each kernel's name, grid and block dims, and warp instruction count):

- **identical**: one group per set of kernels that are identical in the trace (same name, grid,
  block and instruction count). Its first kernel is simulated; the others take its numbers.
- **stratified** (after Sieve, ISPASS 2023): within a kernel name, kernels are sorted by
  instruction count and split into strata:
  - a stratum whose counts do not vary takes one kernel (its first);
  - one whose counts vary little (coefficient of variation at most `NARROW_COV`, 5%) takes the
    kernel nearest its median count;
  - one whose counts vary more is split at its widest gap (the largest ratio between
    neighbouring counts), again, until every stratum is narrow.
  Each kernel's estimate is its representative's numbers scaled by the ratio of their
  instruction counts (the representative's CPI times the kernel's instructions), as Sieve does.
  Where the trace has real kernel times (a profile import), strata are split further by real
  time until the stated 95% bound on the total is within `TARGET_ERROR_PCT` (1%): more kernels
  are simulated where the hardware says the kernels behave differently.

The error figure stated for a sampled run is a bound from the spread the method leaves inside
each stratum (`stated_error_pct`): it assumes, as Sieve does, that kernels alike in name and
instruction count run at a similar CPI; it cannot see behaviour that depends on the data rather
than on the kernel's shape (see the docs).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from cascade_core.models import KernelLaunch, KernelStat, SamplingInfo, SimMetrics, SimSummary
from cascade_core.trace_kernels import kernel_id_of

Method = Literal["none", "identical", "stratified"]
METHODS: tuple[Method, ...] = ("none", "identical", "stratified")

NARROW_COV = 0.05  # a stratum of instruction counts this tight takes one kernel (its middle)
TARGET_ERROR_PCT = 1.0  # with real times: strata split by time until the stated bound is this


@dataclass(frozen=True)
class KernelFacts:
    """One kernel of the trace's list, as sampling sees it."""

    position: int  # 0-based, among the list's kernels
    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    instructions: int | None  # warp instructions; None when unknown
    real_ns: float | None = None


@dataclass(frozen=True)
class Group:
    representative: int  # the position simulated
    members: tuple[int, ...]  # every position it stands for, the representative among them

    def scale(self, facts: dict[int, KernelFacts], position: int) -> float:
        """A member's estimate as a multiple of the representative's numbers: the ratio of
        their instruction counts (1 when either is unknown or zero)."""
        rep, member = facts[self.representative].instructions, facts[position].instructions
        if not rep or member is None or member <= 0:
            return 1.0
        return member / rep


def groups(method: Method, facts: Sequence[KernelFacts]) -> list[Group]:
    """The trace's kernels in groups, by `method`; `none` is one group per kernel. Groups come in
    the order of their representatives."""
    if method == "none":
        found = [Group(f.position, (f.position,)) for f in facts]
    elif method == "identical":
        found = _identical(facts)
    else:
        found = _stratified(facts)
    return sorted(found, key=lambda g: g.representative)


def _identical(facts: Sequence[KernelFacts]) -> list[Group]:
    by_key: dict[tuple, list[int]] = {}
    for f in facts:
        # a kernel whose count is unknown is identical to nothing but itself
        key = (f.name, f.grid, f.block, f.instructions) if f.instructions is not None else ("#", f.position)
        by_key.setdefault(key, []).append(f.position)
    return [Group(members[0], tuple(members)) for members in by_key.values()]


def _stratified(facts: Sequence[KernelFacts]) -> list[Group]:
    by_name: dict[str, list[KernelFacts]] = {}
    unknown: list[KernelFacts] = []
    for f in facts:
        (unknown if f.instructions is None else by_name.setdefault(f.name, [])).append(f)
    strata = [
        stratum
        for kernels in by_name.values()
        for stratum in _split(sorted(kernels, key=lambda f: (f.instructions, f.position)))
    ]
    if facts and all(f.real_ns is not None and f.real_ns > 0 for f in facts):
        strata = _by_time(strata, sum(float(f.real_ns or 0) for f in facts))
    return [Group(f.position, (f.position,)) for f in unknown] + [_group_of(s) for s in strata]


def _split(kernels: list[KernelFacts]) -> Iterable[list[KernelFacts]]:
    """Strata of kernels sorted by instruction count, split at the widest gap until narrow."""
    counts = [float(f.instructions or 0) for f in kernels]
    if len(kernels) > 1 and cov(counts) > NARROW_COV:
        cut = max(range(1, len(kernels)), key=lambda i: _gap(counts[i - 1], counts[i]))
        yield from _split(kernels[:cut])
        yield from _split(kernels[cut:])
        return
    yield kernels


def _variance(stratum: list[KernelFacts]) -> float:
    """A stratum's share of the variance of the estimated total, one kernel simulated."""
    n = len(stratum)
    if n < 2:
        return 0.0
    s = statistics.stdev(float(f.real_ns or 0) for f in stratum)
    return n * n * s * s * (1 - 1 / n)


def _by_time(strata: list[list[KernelFacts]], total_real: float) -> list[list[KernelFacts]]:
    """More samples where real times vary: split the stratum that adds most to the bound at its
    widest gap in real time, until the bound is within TARGET_ERROR_PCT."""
    strata = [list(s) for s in strata]
    while _bound_pct([_variance(s) for s in strata], total_real) > TARGET_ERROR_PCT:
        worst = max(range(len(strata)), key=lambda i: _variance(strata[i]))
        if _variance(strata[worst]) == 0:
            break
        ordered = sorted(strata[worst], key=lambda f: (f.real_ns, f.position))
        real = [float(f.real_ns or 0) for f in ordered]
        cut = max(range(1, len(ordered)), key=lambda i: _gap(real[i - 1], real[i]))
        strata[worst : worst + 1] = [ordered[:cut], ordered[cut:]]
    return strata


def _bound_pct(variances: Iterable[float], total_real: float) -> float:
    return 100.0 * 1.96 * math.sqrt(sum(variances)) / total_real if total_real > 0 else 0.0


def _gap(low: float, high: float) -> float:
    return high / low if low > 0 else math.inf


def _group_of(stratum: list[KernelFacts]) -> Group:
    members = tuple(sorted(f.position for f in stratum))
    counts = {f.instructions for f in stratum}
    if len(counts) == 1:
        return Group(members[0], members)
    median = statistics.median(f.instructions or 0 for f in stratum)
    middle = min(stratum, key=lambda f: (abs((f.instructions or 0) - median), f.position))
    return Group(middle.position, members)


def cov(values: Sequence[float]) -> float:
    """Coefficient of variation (population): spread relative to the mean; 0 for one value."""
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    return statistics.pstdev(values) / mean if mean > 0 else 0.0


@dataclass(frozen=True)
class Reduction:
    """What sampling saves, before a run: kernels and warp instructions simulated of the trace's."""

    kernels: int
    kernels_simulated: int
    instructions: int | None  # None when some count is unknown
    instructions_simulated: int | None

    @property
    def factor(self) -> float | None:
        """How many times fewer warp instructions are simulated (None when unknown)."""
        if not self.instructions or not self.instructions_simulated:
            return None
        return self.instructions / self.instructions_simulated


def reduction(found: Sequence[Group], facts: Sequence[KernelFacts]) -> Reduction:
    by_position = {f.position: f for f in facts}
    counts = [f.instructions for f in facts]
    known = all(c is not None for c in counts)
    simulated = [by_position[g.representative].instructions for g in found]
    return Reduction(
        kernels=len(facts),
        kernels_simulated=len(found),
        instructions=sum(c or 0 for c in counts) if known else None,
        instructions_simulated=sum(c or 0 for c in simulated) if known else None,
    )


def stated_error_pct(method: Method, found: Sequence[Group], facts: Sequence[KernelFacts]) -> float:
    """The bound stated for a sampled total, in %.

    - `none` simulates every kernel: 0.
    - `identical` groups kernels that are the same in the trace: 0 beyond the simulator's own
      variation between identical kernels (measured: 0.001% on the demo trace).
    - `stratified`, with real kernel times for every kernel: a 95% bound from stratified sampling
      (after STEM, MICRO 2025): 1.96 * sqrt(sum over strata of N^2 * s^2 * (1 - 1/N)) / total
      real time, where a stratum has N kernels of real-time deviation s and one is simulated.
    - `stratified` without them: the instruction-weighted coefficient of variation of instruction
      counts left inside the strata (at most NARROW_COV): how far the estimate is off if CPI
      varies inside a stratum as much as instruction counts do.
    """
    if method != "stratified":
        return 0.0
    by_position = {f.position: f for f in facts}
    members = [[by_position[p] for p in g.members] for g in found]
    if facts and all(f.real_ns is not None and f.real_ns > 0 for f in facts):
        return _bound_pct((_variance(m) for m in members), sum(float(f.real_ns or 0) for f in facts))
    total = weighted = 0.0
    for stratum in members:
        counts = [float(f.instructions or 0) for f in stratum]
        total += sum(counts)
        weighted += sum(counts) * cov(counts)
    return 100.0 * weighted / total if total else 0.0


def facts_of(
    names: Sequence[str],
    kernels: Iterable[KernelLaunch],
    real: Sequence[tuple[str | None, float | None]] | None = None,
) -> list[KernelFacts]:
    """The facts of the kernels a trace's `kernelslist.g` names (`names`, in its order), from the
    trace's kernel records (by the id in each file name: `kernel-12.traceg.xz` is 12) and its real
    kernel times (by position), where it has them."""
    by_id = {k.kernel_id: k for k in kernels}
    facts = []
    for position, name in enumerate(names):
        kernel = by_id.get(kernel_id_of(name) or -1)
        real_ns = real[position][1] if real is not None and position < len(real) else None
        facts.append(
            KernelFacts(
                position,
                kernel.name if kernel else name,
                kernel.grid if kernel else (0, 0, 0),
                kernel.block if kernel else (0, 0, 0),
                kernel.instructions if kernel else None,
                real_ns if real_ns is not None and math.isfinite(real_ns) and real_ns > 0 else None,
            )
        )
    return facts


@dataclass(frozen=True)
class SimSample:
    """What one sampled sim simulates (`representatives`, in trace order) and whose numbers each
    other kernel of its part of the trace takes (`estimates`: representative -> (kernel, scale))."""

    method: Method
    representatives: tuple[int, ...]
    estimates: dict[int, tuple[tuple[int, float], ...]]
    info: SamplingInfo

    def to_json(self) -> str:
        return json.dumps(
            {
                "method": self.method,
                "representatives": list(self.representatives),
                "estimates": {
                    str(rep): [list(m) for m in members] for rep, members in self.estimates.items()
                },
                "info": self.info.model_dump(),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> SimSample:
        doc = json.loads(text)
        return cls(
            doc["method"],
            tuple(doc["representatives"]),
            {
                int(rep): tuple((int(m), float(s)) for m, s in members)
                for rep, members in doc["estimates"].items()
            },
            SamplingInfo.model_validate(doc["info"]),
        )


def sim_sample(method: Method, facts: Sequence[KernelFacts]) -> SimSample:
    """The sample of `facts` (a whole trace, or a shard's range of it) by `method`."""
    found = groups(method, facts)
    by_position = {f.position: f for f in facts}
    estimates = {
        g.representative: tuple(
            (m, round(g.scale(by_position, m), 9)) for m in g.members if m != g.representative
        )
        for g in found
    }
    saved = reduction(found, facts)
    assert method != "none"
    return SimSample(
        method,
        tuple(g.representative for g in found),
        {rep: members for rep, members in estimates.items() if members},
        SamplingInfo(
            method=method,
            kernels=saved.kernels,
            kernels_simulated=saved.kernels_simulated,
            instructions=saved.instructions,
            instructions_simulated=saved.instructions_simulated,
            error_pct=round(stated_error_pct(method, found, facts), 4),
        ),
    )


def sample_costs(method: Method, facts: Sequence[KernelFacts]) -> list[int | None]:
    """What each kernel costs a sampled run (for splitting it into shards): a representative's
    instructions (unknown: None), next to nothing (1) for a kernel that is estimated."""
    chosen = {g.representative for g in groups(method, facts)}
    return [(f.instructions or None) if f.position in chosen else 1 for f in facts]


def sampled_totals(sim: SimSummary, kernels: Sequence[KernelStat]) -> SimMetrics:
    """A sim's totals as its results state them. A sampled sim's simulator counted only the
    kernels it simulated; its results count every kernel, the estimated ones too (as its time
    does): the cycles and instructions summed over its kernel rows, the IPC theirs."""
    if sim.sampling is None:
        return sim.latest
    rows = [k for k in kernels if k.gpu_sim_cycle is not None and not k.warmup]
    cycles = float(sum(k.gpu_sim_cycle or 0 for k in rows))
    insns = float(sum(k.gpu_sim_insn or 0 for k in rows))
    return sim.latest.model_copy(
        update={
            "gpu_tot_sim_cycle": cycles,
            "gpu_tot_sim_insn": insns,
            "gpu_tot_ipc": round(insns / cycles, 4) if cycles else None,
        }
    )
