"""A run's samples (issue 33): for each run entry with `sampling`, what each of its sims
simulates, and whose numbers every other kernel of the trace takes.

A sampled entry with shards is split first, by what the sample costs to simulate (its
representatives' instructions; an estimated kernel costs next to nothing), and each shard samples
its own range, so every kernel's estimate comes from a kernel of the same sim."""

from __future__ import annotations

import asyncio
from pathlib import Path

from cascade_core.comparison import RealTiming
from cascade_core.models import RunEntry, TraceDetail
from cascade_core.sampling import KernelFacts, SimSample, facts_of, sample_costs, sim_sample
from cascade_core.shard_plan import ShardPlanError, ShardRange, plan_shards
from cascade_core.trace_kernels import KernelStatsError, listed_kernels

Samples = dict[str, list[tuple[ShardRange | None, SimSample]]]


def trace_facts(trace: TraceDetail, trace_dir: Path, real: RealTiming | None) -> list[KernelFacts]:
    """The facts of the kernels the trace's list runs, with its real kernel times (blocking:
    call it in a thread)."""
    try:
        names = listed_kernels(trace_dir) or []
    except KernelStatsError as exc:
        raise ShardPlanError(str(exc)) from None
    return facts_of(names, trace.kernels, real)


async def sample_plans(
    trace: TraceDetail, trace_dir: Path, entries: list[RunEntry], real: RealTiming | None = None
) -> Samples:
    """An entry's variant -> its sims' samples (with their shard, when it has shards). Raises
    ShardPlanError with a sentence when it cannot be sampled as asked."""
    sampled = [e for e in entries if e.sampling != "none"]
    if not sampled:
        return {}
    facts = await asyncio.to_thread(trace_facts, trace, trace_dir, real)
    if not facts:
        raise ShardPlanError(f"trace {trace.id} lists no kernel to sample")
    plans: Samples = {}
    for entry in sampled:
        if entry.shards == 1:
            plans[entry.variant] = [(None, sim_sample(entry.sampling, facts))]
            continue
        try:
            ranges = plan_shards(sample_costs(entry.sampling, facts), entry.shards, entry.warmup_kernels)
        except ShardPlanError as exc:
            raise ShardPlanError(
                f"trace {trace.id} cannot run in {entry.shards} sampled shards on {entry.gpu_config}: {exc}"
            ) from None
        plans[entry.variant] = [(r, sim_sample(entry.sampling, facts[r.first : r.last + 1])) for r in ranges]
    return plans
