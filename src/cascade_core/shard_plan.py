"""Shard planning: one trace's kernels split into contiguous ranges of balanced expected cost.

A sharded replica runs as several sims. Each simulates a contiguous range of the trace's kernels
(the range it *owns*), preceded by up to `warmup_kernels` kernels just before the range, whose
results warm the caches and DRAM rows and are then dropped. Ranges are balanced by expected
cost (instruction counts, else trace sizes), warm-up included, never by kernel count.

Pure: the standard library only, so the server (to plan a run) and the terminal UI (to show the
expected speed-up on the New run screen) share one definition.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

# The worker variable that tells a shard's worker its part of the trace (a ShardInfo as JSON).
SHARD_VARIABLE = "CASCADE_SHARD"

# Limits of a run entry's `shards` and `warmup_kernels`.
MAX_SHARDS = 64
MAX_WARMUP_KERNELS = 1_000_000

# A plan whose costliest shard (its warm-up included) costs more than 1 / MIN_SPEEDUP of the
# whole trace gains almost nothing over one sim: when its warm-up is the reason (without it the
# split would be faster), it is refused rather than run for nothing.
MIN_SPEEDUP = 1.1

# Measured with the real simulator (SM7_QV100, the demo trace `tinyformer-step-sm70`, 15 kernels
# in 3 shards): what sharding costs in accuracy against one sim of the whole trace. The warm-up
# row is tests/e2e/test_real_accelsim_shards.py's own figure (docs/guides/sharding.md).
MEASURED_ERROR = {
    0: "each shard starts cold: max per-kernel cycle error 3.02%, mean 0.79%, total cycles +0.71%",
    1: "1 warm-up kernel: max per-kernel cycle error 1.99%, mean 0.30%, total cycles +0.17%",
}
MEASURED_ON = "measured on the demo trace (15 kernels, 3 shards, SM7_QV100)"


def measured_error(warmup_kernels: int) -> str:
    """The measured error figure closest to this warm-up, with where it was measured."""
    return f"{MEASURED_ERROR[min(max(warmup_kernels, 0), 1)]} ({MEASURED_ON})"


@dataclass(frozen=True)
class ShardRange:
    """One shard of a replica: it owns kernels `first`..`last` (0-based trace positions,
    inclusive) and simulates the `warmup` kernels before `first` ahead of them."""

    index: int
    count: int
    first: int
    last: int
    warmup: int

    @property
    def start(self) -> int:
        """The first kernel the shard simulates (a warm-up one when it has any)."""
        return self.first - self.warmup

    @property
    def kernels(self) -> int:
        """How many kernels the shard owns."""
        return self.last - self.first + 1


class ShardPlanError(ValueError):
    """The trace cannot be split as asked; the message is a sentence for the API's `detail`."""


def _costs(costs: Sequence[float | None]) -> list[int]:
    """Costs as positive integers: unknown or non-positive ones take the mean of the known ones
    (1 when none is known), so every kernel weighs something."""
    known = [c for c in costs if c is not None and c > 0]
    fallback = max(1, round(sum(known) / len(known))) if known else 1
    return [max(1, round(c)) if c is not None and c > 0 else fallback for c in costs]


def _segments(prefix: list[int], n: int, warmup: int, limit: int) -> list[tuple[int, int]] | None:
    """Greedy: each range as long as its cost (warm-up included) stays within `limit`. The
    cost of [a, b) grows with b and shrinks with a, so this needs the fewest ranges."""
    out: list[tuple[int, int]] = []
    a = 0
    while a < n:
        base = prefix[max(0, a - warmup)]
        if prefix[a + 1] - base > limit:
            return None
        lo, hi = a + 1, n  # the largest b with cost(a, b) <= limit
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if prefix[mid] - base <= limit:
                lo = mid
            else:
                hi = mid - 1
        out.append((a, lo))
        a = lo
    return out


def range_cost(prefix: list[int], a: int, b: int, warmup: int) -> int:
    return prefix[b] - prefix[max(0, a - warmup)]


def plan_shards(costs: Sequence[float | None], shards: int, warmup_kernels: int) -> list[ShardRange]:
    """Split kernels with these expected costs (in trace order) into `shards` contiguous,
    non-empty ranges that minimise the largest range's cost, its warm-up kernels included."""
    n = len(costs)
    if shards < 1:
        raise ShardPlanError("shards must be at least 1")
    if warmup_kernels < 0:
        raise ShardPlanError("warmup_kernels must not be negative")
    if n == 0:
        raise ShardPlanError("the trace has no kernels to simulate")
    if shards > 1 and n == 1:
        raise ShardPlanError(
            "the trace has only one kernel, so it cannot be split into shards; use shards: 1"
        )
    if shards > n:
        raise ShardPlanError(
            f"the trace has {n} kernels, fewer than the {shards} shards asked for; use at most {n} shards"
        )
    weights = _costs(costs)
    prefix = [0, *accumulate(weights)]
    lo = max(range_cost(prefix, i, i + 1, warmup_kernels) for i in range(n))
    hi = range_cost(prefix, 0, n, warmup_kernels)
    while lo < hi:  # the smallest limit the greedy meets with at most `shards` ranges
        mid = (lo + hi) // 2
        found = _segments(prefix, n, warmup_kernels, mid)
        if found is not None and len(found) <= shards:
            hi = mid
        else:
            lo = mid + 1
    segments = _segments(prefix, n, warmup_kernels, lo)
    assert segments is not None
    while len(segments) < shards:  # split the costliest range that has two kernels or more
        splittable = [s for s in segments if s[1] - s[0] > 1]
        a, b = max(splittable, key=lambda s: range_cost(prefix, s[0], s[1], warmup_kernels))
        cut = min(
            range(a + 1, b),
            key=lambda m: max(
                range_cost(prefix, a, m, warmup_kernels), range_cost(prefix, m, b, warmup_kernels)
            ),
        )
        at = segments.index((a, b))
        segments[at : at + 1] = [(a, cut), (cut, b)]
    plan = [
        ShardRange(index=i, count=shards, first=a, last=b - 1, warmup=min(warmup_kernels, a))
        for i, (a, b) in enumerate(segments)
    ]
    if warmup_kernels and shards > 1:
        _refuse_warmup_without_speedup(costs, plan, warmup_kernels)
    return plan


def _refuse_warmup_without_speedup(
    costs: Sequence[float | None], plan: Sequence[ShardRange], warmup_kernels: int
) -> None:
    """ShardPlanError when the warm-up leaves the plan no speed-up (below MIN_SPEEDUP) that the
    same split without warm-up would have: each shard would simulate about the whole trace."""
    speedup = expected_speedup(costs, plan)
    if speedup >= MIN_SPEEDUP:
        return
    cold = expected_speedup(costs, plan_shards(costs, len(plan), 0))
    if cold < MIN_SPEEDUP:
        return  # the trace itself does not split well (one kernel costs about all): not the warm-up's doing
    share = max(simulated_costs(costs, plan)) / sum(_costs(costs))
    raise ShardPlanError(
        f"{warmup_kernels} warm-up kernels leave no speed-up: the costliest shard would simulate "
        f"{share:.0%} of the trace, warm-up included (expected speed-up ×{speedup:.2f}, "
        f"×{cold:.1f} without warm-up); use fewer warm-up kernels or fewer shards"
    )


def simulated_costs(costs: Sequence[float | None], plan: Sequence[ShardRange]) -> list[int]:
    """Each shard's expected cost: its warm-up kernels and its own."""
    prefix = [0, *accumulate(_costs(costs))]
    return [prefix[s.last + 1] - prefix[s.start] for s in plan]


def expected_speedup(costs: Sequence[float | None], plan: Sequence[ShardRange]) -> float:
    """One sim's expected cost over the costliest shard's: the wall-time speed-up when every
    shard runs at once (each shard also pays the simulator's start-up, which this leaves out)."""
    if not plan or not costs:
        return 1.0
    return sum(_costs(costs)) / max(simulated_costs(costs, plan))
