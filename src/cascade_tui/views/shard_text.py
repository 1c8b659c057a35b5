"""How a shard reads in the UI and the CLI: `2/3 k6-10 +1w` (index of count, the kernels it owns
as 1-based trace positions, its warm-up kernels), and the New run screen's shards note."""

from __future__ import annotations

from collections.abc import Sequence

from cascade_core.models import ShardInfo, SimSummary
from cascade_core.shard_plan import ShardPlanError, expected_speedup, measured_error, plan_shards


def shard_cell(shard: ShardInfo | None) -> str:
    if shard is None:
        return ""
    first, last = shard.kernel_first + 1, shard.kernel_last + 1
    owned = f"k{first}" if first == last else f"k{first}-{last}"
    warm = f" +{shard.warmup_kernels}w" if shard.warmup_kernels else ""
    return f"{shard.index + 1}/{shard.count} {owned}{warm}"


def shard_words(shard: ShardInfo) -> str:
    """The long form, for a sim's detail line."""
    first, last = shard.kernel_first + 1, shard.kernel_last + 1
    owned = f"kernel {first}" if first == last else f"kernels {first}-{last}"
    warm = (
        f", after {shard.warmup_kernels} warm-up kernel{'s' if shard.warmup_kernels != 1 else ''}"
        if shard.warmup_kernels
        else ", no warm-up"
    )
    return f"shard {shard.index + 1} of {shard.count}: {owned}{warm}"


def any_sharded(sims: Sequence[SimSummary]) -> bool:
    return any(sim.shard is not None for sim in sims)


def shards_note(costs: Sequence[int | None], shards: int, warmup: int, slots: int | None = None) -> str:
    """What the New run screen says under its shards field: the expected speed-up of this trace in
    that many shards, and the error sharding costs as measured."""
    if shards <= 1:
        return "1 shard: one sim simulates the whole trace (more shards: each simulates a part, in parallel)"
    try:
        plan = plan_shards(costs, shards, warmup)
    except ShardPlanError as exc:
        return f"cannot shard: {exc}"
    speedup = expected_speedup(costs, plan)
    at_once = f"; {slots} run at once here" if slots is not None and slots < shards else ""
    return (
        f"{shards} shards: expected speed-up ×{speedup:.1f} when all run at once{at_once}. "
        f"Error: {measured_error(warmup)}"
    )
