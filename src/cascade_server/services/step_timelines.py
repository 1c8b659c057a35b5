"""A run's step timelines (`GET /api/runs/{id}/step-timelines`, the Perfetto trace, the accuracy
report): what each sim sent, except for sharded replicas. A shard simulates only part of the
trace, so it sends none of its own; a sharded replica's one timeline is built here, as if one sim
had run the whole trace, from the owned kernels of all its shards (the run's merged kernels,
`store.outputs.run_kernels`: warm-up kernels left out, each kernel once, at its trace position),
once every shard has succeeded, the moment an unsharded sim sends its own. Until then the replica
has none, as an unfinished sim has none. Timelines a shard sent itself (an older worker's,
partial) are never shown.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from pathlib import Path

from cascade_core.models import KernelStat, RunDetail, SimStepTimeline, SimSummary
from cascade_core.step_inputs import TimelineFileError, read_step_inputs
from cascade_core.timeline.compare import compare
from cascade_core.timeline.formats import CorrectedTimeline, KernelMapping
from cascade_core.timeline.replay import simulate

from ..storage import Store

log = logging.getLogger(__name__)

ReplicaKey = tuple[str, str, tuple[tuple[str, str], ...], int]


def _replica(sim: SimSummary) -> ReplicaKey:
    return (sim.gpu_config, sim.label, tuple(sorted(sim.options.items())), sim.replica)


def sharded_replicas(sims: Iterable[SimSummary]) -> dict[ReplicaKey, list[SimSummary]]:
    """Each sharded replica's current shards (a retried shard's failed sim has left the run),
    in shard order."""
    replicas: dict[ReplicaKey, list[SimSummary]] = {}
    for sim in sims:
        if sim.shard is not None:
            replicas.setdefault(_replica(sim), []).append(sim)
    for shards in replicas.values():
        shards.sort(key=lambda s: s.shard.index if s.shard is not None else 0)
    return replicas


def merged_timeline(
    run: RunDetail,
    shards: list[SimSummary],
    kernels: list[KernelStat],
    timeline: CorrectedTimeline,
    mapping: KernelMapping,
) -> SimStepTimeline:
    """The replica's step timeline from its shards' owned kernels. A kernel's trace position is
    its `kernel_index` (a shard's own launch numbers start again at 1), so kernel `N` of the
    mapping (the Nth launch) is the kernel at position N-1. Pure."""
    ids = {s.id for s in shards}
    times = {
        k.kernel_index + 1: k.sim_time_ns for k in kernels if k.sim_id in ids and k.sim_time_ns is not None
    }
    first = shards[0]
    meta = {
        "run_name": run.trace.id,
        "trace_id": run.trace.id,
        "sim_id": first.id,
        "sim_ids": [s.id for s in shards],
        "shards": len(shards),
        "gpu_config": first.gpu_config,
        "replica": first.replica,
        "profile": timeline.source.get("profile"),
        "device": timeline.source.get("device"),
    }
    simulated = simulate(timeline, mapping, times, meta=meta)
    return SimStepTimeline(
        sim_id=first.id,
        gpu_config=first.gpu_config,
        replica=first.replica,
        simulated=simulated,
        compare=compare(timeline, simulated),
        label=first.label,
    )


async def run_step_timelines(store: Store, traces_dir: Path, run: RunDetail) -> list[SimStepTimeline]:
    stored = await store.outputs.run_step_timelines(run.id)
    replicas = sharded_replicas(run.sims)
    if not replicas:
        return stored
    shard_ids = {s.id for shards in replicas.values() for s in shards}
    retried = {s.retry_of for s in run.sims if s.retry_of}
    timelines = [t for t in stored if t.sim_id not in shard_ids and t.sim_id not in retried]
    done = [
        shards
        for shards in replicas.values()
        if all(s.state == "succeeded" for s in shards) and len(shards) == shards[0].shard.count  # type: ignore[union-attr]
    ]
    if not done or not run.trace.has_step_timeline:
        return timelines
    try:
        timeline, mapping = await asyncio.to_thread(read_step_inputs, traces_dir / run.trace.id)
    except TimelineFileError as exc:
        log.warning("run %s: no step timeline for its sharded replicas: %s", run.id, exc)
        return timelines
    kernels = await store.outputs.run_kernels(run.id)
    merged = await asyncio.to_thread(
        lambda: [merged_timeline(run, shards, kernels, timeline, mapping) for shards in done]
    )
    order = {s.id: n for n, s in enumerate(run.sims)}
    return sorted(
        timelines + merged, key=lambda t: (t.gpu_config, t.label or "", t.replica, order.get(t.sim_id, 0))
    )
