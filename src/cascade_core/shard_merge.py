"""A run's kernels merged from its shards: each kernel once, from the shard that owns it, as if
one sim had run the whole trace. Pure: models in, models out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from cascade_core.models import KernelStat, SimMetrics, SimSummary, run_state


def is_owned(sim: SimSummary, kernel_index: int) -> bool:
    shard = sim.shard
    return shard is None or shard.kernel_first <= kernel_index <= shard.kernel_last


def mark_warmup(sim: SimSummary, kernels: Iterable[KernelStat]) -> list[KernelStat]:
    """A sim's own kernels, its warm-up ones marked (`warmup: true`)."""
    first = sim.shard.kernel_first if sim.shard else 0
    return [k.model_copy(update={"warmup": True}) if k.kernel_index < first else k for k in kernels]


def owned(sim: SimSummary, kernels: Iterable[KernelStat]) -> list[KernelStat]:
    """The kernels a sim reports as the run's: all of them, or a shard's own range."""
    return [k for k in kernels if is_owned(sim, k.kernel_index) and not k.warmup]


Replica = tuple[str, int]  # (gpu_config, replica)


def replicas(sims: Iterable[SimSummary]) -> dict[Replica, list[SimSummary]]:
    """The run's sims by replica, each replica's shards in order."""
    out: dict[Replica, list[SimSummary]] = {}
    for sim in sims:
        out.setdefault((sim.gpu_config, sim.replica), []).append(sim)
    for shards in out.values():
        shards.sort(key=lambda s: s.shard.index if s.shard else 0)
    return out


def merge_kernels(sims: Sequence[SimSummary], kernels: Iterable[KernelStat]) -> list[KernelStat]:
    """Each kernel once per replica, from the shard that owns it, ordered by config, replica,
    then kernel; kernels of sims not in `sims` are left out."""
    by_id = {sim.id: sim for sim in sims}
    kept = [
        k
        for k in kernels
        if (sim := by_id.get(k.sim_id)) is not None and is_owned(sim, k.kernel_index) and not k.warmup
    ]
    return sorted(kept, key=lambda k: (by_id[k.sim_id].gpu_config, by_id[k.sim_id].replica, k.kernel_index))


@dataclass(frozen=True)
class ReplicaProgress:
    config: str
    replica: int
    state: str  # the replica's state: succeeded only when every shard is
    kernels_done: int
    kernels_total: int
    shards: int


def replica_progress(sims: Iterable[SimSummary]) -> list[ReplicaProgress]:
    """Each replica's progress summed over its shards, and its state as `run_state` derives it
    from its shards'."""
    out = []
    for (config, replica), shards in replicas(sims).items():
        out.append(
            ReplicaProgress(
                config=config,
                replica=replica,
                state=run_state(s.state for s in shards),
                kernels_done=sum(s.kernels_done for s in shards),
                kernels_total=sum(s.kernels_total for s in shards),
                shards=len(shards),
            )
        )
    return out


def total_cycles(kernels: Iterable[KernelStat]) -> int:
    return sum(k.gpu_sim_cycle or 0 for k in kernels)


def merged_state(states: Sequence[str]) -> str:
    """A replica's state from its shards': succeeded only when every shard is; else the first
    unfinished shard's state; else failed when one failed; else cancelled."""
    if all(s == "succeeded" for s in states):
        return "succeeded"
    for state in ("running", "lost", "launching", "pending"):
        if state in states:
            return state
    return "failed" if "failed" in states else "cancelled"


def replica_sims(
    sims: Mapping[str, SimSummary], kernels: Iterable[KernelStat] = ()
) -> tuple[dict[str, SimSummary], dict[str, str]]:
    """One sim per replica: a sharded replica as if one sim had run the whole trace (under its
    first shard's id, its state and progress summed over its shards, its totals those of the
    shards' own `kernels`, warm-up left out), and which of those ids each sim's kernels count
    under. Sims of the whole trace are left as they are."""
    own: dict[str, list[KernelStat]] = {}
    for stat in kernels:
        sim = sims.get(stat.sim_id)
        if sim is not None and is_owned(sim, stat.kernel_index) and not stat.warmup:
            own.setdefault(stat.sim_id, []).append(stat)
    out: dict[str, SimSummary] = {sim.id: sim for sim in sims.values() if sim.shard is None}
    owner: dict[str, str] = {sim_id: sim_id for sim_id in out}
    for shards in replicas(s for s in sims.values() if s.shard is not None).values():
        first = shards[0]
        for sim in shards:
            owner[sim.id] = first.id
        mine = [k for s in shards for k in own.get(s.id, [])]
        # Without kernels, each shard's own totals (which count its warm-up kernels too).
        cycles = (
            [float(k.gpu_sim_cycle) if k.gpu_sim_cycle is not None else None for k in mine]
            if mine
            else [s.latest.gpu_tot_sim_cycle for s in shards]
        )
        insns = (
            [float(k.gpu_sim_insn) if k.gpu_sim_insn is not None else None for k in mine]
            if mine
            else [s.latest.gpu_tot_sim_insn for s in shards]
        )
        total_cycles = sum(c for c in cycles if c is not None) if any(c is not None for c in cycles) else None
        total_insns = sum(i for i in insns if i is not None) if any(i is not None for i in insns) else None
        ipc = total_insns / total_cycles if total_cycles and total_insns is not None else None
        out[first.id] = first.model_copy(
            update={
                "state": merged_state([s.state for s in shards]),
                "kernels_done": sum(s.kernels_done for s in shards),
                "kernels_total": sum(s.kernels_total for s in shards),
                "latest": SimMetrics(
                    gpu_tot_sim_cycle=total_cycles, gpu_tot_sim_insn=total_insns, gpu_tot_ipc=ipc
                ),
                "shard": None,
            }
        )
    return out, owner
