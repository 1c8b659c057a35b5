"""A run's shard plans: for each sharded entry, the ranges its replicas are split into."""

from __future__ import annotations

import asyncio
from pathlib import Path

from cascade_core.models import RunEntry, TraceDetail
from cascade_core.shard_plan import ShardPlanError, ShardRange, plan_shards

from .shard_costs import kernel_costs


async def shard_plans(
    trace: TraceDetail, trace_dir: Path, entries: list[RunEntry]
) -> dict[str, list[ShardRange]]:
    """An entry's variant (its label, else its gpu_config) -> its shards, for every entry with `shards` above 1 (the same costs for every
    config: what a kernel costs to simulate is the trace's, not the config's). Raises
    ShardPlanError with a sentence naming the trace when it cannot be split as asked."""
    sharded = [e for e in entries if e.shards > 1 and e.sampling == "none"]  # a sample splits itself
    if not sharded:
        return {}
    try:
        costs, _ = await asyncio.to_thread(kernel_costs, trace_dir, trace)
    except ShardPlanError as exc:
        raise ShardPlanError(f"trace {trace.id} cannot be split into shards: {exc}") from None
    plans = {}
    for entry in sharded:
        try:
            plans[entry.variant] = plan_shards(costs, entry.shards, entry.warmup_kernels)
        except ShardPlanError as exc:
            raise ShardPlanError(
                f"trace {trace.id} cannot run in {entry.shards} shards on {entry.gpu_config}: {exc}"
            ) from None
    return plans
