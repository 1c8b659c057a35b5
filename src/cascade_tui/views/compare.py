"""Comparison maths for the kernels view: per-kernel simulated time per config (the server's own
comparison, `cascade_core.comparison`), totals per config, the fastest config (ties within 1%),
MAPE against real time, and whether numbers come from the stand-in. Pure (no Textual, no I/O), so it is tested on its own.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cascade_core.accuracy import accuracy, pairs_of
from cascade_core.comparison import RealTiming
from cascade_core.comparison import config_order as ordered_configs
from cascade_core.comparison import kernel_rows as comparison_rows
from cascade_core.models import (
    TERMINAL_SIM_STATES,
    ComparisonRow,
    KernelStat,
    RunDetail,
    RunSummary,
    SimSummary,
)
from cascade_core.shard_merge import replica_sims

from .formatting import plural
from .power import SimEnergy, sim_energies
from .sampling import estimate_note

TIE_TOLERANCE = 0.01  # configs within 1% of the fastest tie with it


@dataclass(frozen=True)
class ConfigTotal:
    config: str
    median_ns: float | None  # median of per-sim totals over succeeded replicas
    low_ns: float | None
    high_ns: float | None
    succeeded: int  # replicas that succeeded (and so count)
    replicas: int
    cycles: float | None = None  # median latest.gpu_tot_sim_cycle over succeeded replicas
    ipc: float | None = None
    # No replica succeeded (yet): `median_ns` is the running total of the kernels finished so
    # far (median over the replicas that finished any), never ranked against whole totals.
    partial: bool = False
    kernels_done: int = 0  # partial: the most kernels a replica finished
    kernels_total: int = 0
    # Kernels the simulator failed on (the most over the replicas that count): the total is
    # over the other kernels only, never the whole trace's.
    kernels_failed: int = 0
    # A sampled config: what its totals are estimated from (views/sampling.estimate_note).
    estimate: str | None = None
    # No replica succeeded and one is still to finish: its result is not in yet, so no other
    # config is ranked against it (`rank`).
    waiting: bool = False
    # A power config (its sims simulate power, issue 34): the median energy over the replicas
    # counted above, of the kernels that have power, and its average power over their time
    # (views/power.py); the most kernels a replica has without power (left out of the energy).
    power: bool = False
    energy_j: float | None = None
    power_w: float | None = None
    kernels_without_power: int = 0

    def coverage_note(self) -> str | None:
        """`16 of 20 kernels, 4 failed in the simulator`, when some did."""
        if not self.kernels_failed:
            return None
        total = self.kernels_total or self.kernels_failed
        return (
            f"{total - self.kernels_failed} of {plural(total, 'kernel')}, "
            f"{self.kernels_failed} failed in the simulator"
        )


@dataclass(frozen=True)
class Ranking:
    """The fastest config(s) and every other config as a multiple of the fastest."""

    fastest: tuple[str, ...]  # more than one when they tie within 1%
    multiples: dict[str, float] = field(default_factory=dict)  # config -> total / fastest total
    missing: tuple[str, ...] = ()  # configs with no succeeded replica
    # Of `missing`, the configs whose sims are still to finish: until they are in, no config is
    # named fastest and none is a multiple of the fastest (it may be slower than what comes).
    waiting: tuple[str, ...] = ()
    held: tuple[str, ...] = ()  # configs with a result, not ranked while others are waiting

    def sentence(self, finished: bool = False) -> str:
        """The ranking in words; `finished`: the run is over, so what is missing stays missing."""
        if len(self.multiples) + len(self.missing) == 1 and self.fastest:
            return "Only one config in this run, so there is nothing to compare it with."
        if self.waiting and len(self.held) + len(self.missing) > 1:
            return (
                f"Waiting for {', '.join(self.waiting)}: no config is named fastest until every "
                "config has a result."
            )
        if not self.fastest:
            return (
                f"No config has a succeeded replica{'' if finished else ' yet'}, "
                "so there is no fastest config."
            )
        if len(self.fastest) > 1:
            head = " and ".join(self.fastest) + " tie for fastest (within 1%)."
        else:
            head = f"{self.fastest[0]} is fastest."
        others = [f"{cfg} {mult:.2f}x" for cfg, mult in self.multiples.items() if cfg not in self.fastest]
        parts = [head]
        if others:
            parts.append("Others: " + ", ".join(others) + ".")
        if self.missing:
            parts.append("No succeeded replica: " + ", ".join(self.missing) + ".")
        return " ".join(parts)


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def config_order(entries_configs: Iterable[str], sims: Iterable[SimSummary]) -> list[str]:
    """The run's configs in entry order, without repeats, plus any a sim names that no entry does."""
    return ordered_configs(entries_configs, (sim.label for sim in sims))


def kernel_rows(
    configs: Sequence[str],
    sims: Mapping[str, SimSummary],
    kernels: Iterable[KernelStat],
    real: RealTiming | None = None,
    names: Sequence[str] = (),
) -> list[ComparisonRow]:
    """The server's per-kernel comparison (`cascade_core.comparison`) over the sims the UI has;
    `names`: the trace's kernel names (`comparison.trace_kernel_names`), for positions no sim reached yet."""
    return comparison_rows(configs, {sim_id: sim.label for sim_id, sim in sims.items()}, kernels, real, names)


def sim_totals(kernels: Iterable[KernelStat]) -> dict[str, float]:
    """Total simulated time per sim: the sum of `sim_time_ns` over the kernels it finished."""
    totals: dict[str, float] = {}
    for stat in kernels:
        if stat.sim_time_ns is not None:
            totals[stat.sim_id] = totals.get(stat.sim_id, 0.0) + stat.sim_time_ns
    return totals


def sim_counts(kernels: Iterable[KernelStat], owner: Mapping[str, str]) -> dict[str, tuple[float, float]]:
    """(cycles, instructions) per sim (a shard's under its replica's first sim): the sums over
    the kernels it has rows for, those estimated from a representative included."""
    sums: dict[str, tuple[float, float]] = {}
    for k in kernels:
        if k.gpu_sim_cycle is None or k.warmup:
            continue
        sim = owner.get(k.sim_id, k.sim_id)
        cycles, insns = sums.get(sim, (0.0, 0.0))
        sums[sim] = (cycles + k.gpu_sim_cycle, insns + (k.gpu_sim_insn or 0))
    return sums


def config_totals(
    configs: Sequence[str], sims: Mapping[str, SimSummary], kernels: Iterable[KernelStat]
) -> list[ConfigTotal]:
    """Per config, the median total over replicas that succeeded (a sim that did not succeed has
    only part of its kernels, so it is left out), with the lowest and highest total. A config with
    no succeeded replica gets the running total of its finished kernels, marked `partial`. A
    sharded replica counts as one sim of the whole trace (its shards' kernels together)."""
    kernels = list(kernels)
    estimates = {cfg: sampled_estimate(cfg, sims.values()) for cfg in configs}
    sims, owner = replica_sims(sims, kernels)
    per_sim = sim_totals(k.model_copy(update={"sim_id": owner.get(k.sim_id, k.sim_id)}) for k in kernels)
    energies = sim_energies(kernels, owner)
    counted = sim_counts(kernels, owner)
    failed: dict[str, int] = {}
    for k in kernels:
        if k.failed is not None:
            failed[owner.get(k.sim_id, k.sim_id)] = failed.get(owner.get(k.sim_id, k.sim_id), 0) + 1
    out = []
    for cfg in configs:
        replicas = [s for s in sims.values() if s.label == cfg]
        ok = [s for s in replicas if s.state == "succeeded"]
        if not ok:
            out.append(_partial_total(cfg, replicas, per_sim, failed, energies))
            continue
        totals = sorted(per_sim.get(s.id, 0.0) for s in ok)
        if estimates.get(cfg) is not None:
            # a sampled sim: the simulator's own totals count only the kernels it simulated; the
            # run's are every kernel's, the estimated ones too (as its time is)
            sums = [counted[s.id] for s in ok if s.id in counted]
            cycles = [c for c, _ in sums]
            ipcs = [i / c for c, i in sums if c]
        else:
            cycles = [s.latest.gpu_tot_sim_cycle for s in ok if s.latest.gpu_tot_sim_cycle is not None]
            ipcs = [s.latest.gpu_tot_ipc for s in ok if s.latest.gpu_tot_ipc is not None]
        out.append(
            ConfigTotal(
                config=cfg,
                median_ns=_median(totals),
                low_ns=totals[0] if totals else None,
                high_ns=totals[-1] if totals else None,
                succeeded=len(ok),
                replicas=len(replicas),
                cycles=_median(cycles),
                ipc=_median(ipcs),
                kernels_total=max((s.kernels_total for s in replicas), default=0),
                kernels_failed=max((failed.get(s.id, 0) for s in ok), default=0),
                estimate=estimates.get(cfg),
                **_energy_fields(ok, replicas, energies),
            )
        )
    return out


def _energy_fields(
    counted: Sequence[SimSummary], replicas: Sequence[SimSummary], energies: Mapping[str, SimEnergy]
) -> dict[str, Any]:
    """ConfigTotal's power fields over the replicas `counted` (as its time is); `power` when any
    of the config's replicas simulates it, its power still to come or not."""
    have = [energies[s.id] for s in counted if s.id in energies]
    powers = [w for w in (e.avg_w for e in have) if w is not None]
    return {
        "power": any(s.power for s in replicas) or bool(have),
        "energy_j": _median([e.energy_j for e in have]),
        "power_w": _median(powers),
        "kernels_without_power": max((e.without for e in have), default=0),
    }


def sampled_estimate(config: str, sims: Iterable[SimSummary]) -> str | None:
    """What a sampled config's totals are estimated from: one replica's sims (its shards)."""
    mine = [s for s in sims if s.label == config and s.sampling is not None and s.replica == 0]
    if not mine:
        return None
    infos = [s.sampling for s in mine if s.sampling is not None]
    combined = infos[0].model_copy(
        update={
            "kernels": sum(i.kernels for i in infos),
            "kernels_simulated": sum(i.kernels_simulated for i in infos),
            "error_pct": max(i.error_pct for i in infos),
        }
    )
    return estimate_note(combined)


def _partial_total(
    cfg: str,
    replicas: Sequence[SimSummary],
    per_sim: Mapping[str, float],
    failed: Mapping[str, int],
    energies: Mapping[str, SimEnergy],
) -> ConfigTotal:
    started = [s for s in replicas if s.id in per_sim]
    totals = sorted(per_sim[s.id] for s in started)
    return ConfigTotal(
        config=cfg,
        median_ns=_median(totals),
        low_ns=totals[0] if totals else None,
        high_ns=totals[-1] if totals else None,
        succeeded=0,
        replicas=len(replicas),
        partial=bool(started),
        kernels_done=max((s.kernels_done for s in started), default=0),
        kernels_total=max((s.kernels_total for s in replicas), default=0),
        kernels_failed=max((failed.get(s.id, 0) for s in started), default=0),
        waiting=any(s.state not in TERMINAL_SIM_STATES for s in replicas),
        **_energy_fields(started, replicas, energies),
    )


def rank(totals: Sequence[ConfigTotal], tolerance: float = TIE_TOLERANCE) -> Ranking:
    """The fastest config, configs within `tolerance` of it as ties, the rest as multiples; a
    partial total (no succeeded replica) is missing, not ranked. While a config's result is not
    in (`waiting`: its sims still running), nothing is ranked: what comes may be fastest."""
    have = [t for t in totals if t.median_ns is not None and t.median_ns > 0 and not t.partial]
    missing = tuple(t.config for t in totals if t.median_ns is None or t.partial)
    waiting = tuple(t.config for t in totals if t.waiting and t.config in missing)
    if not have or waiting:
        held = tuple(t.config for t in have)
        return Ranking(fastest=(), multiples={}, missing=missing, waiting=waiting, held=held)
    best = min(t.median_ns for t in have)  # type: ignore[type-var]
    fastest = tuple(t.config for t in have if t.median_ns <= best * (1 + tolerance))  # type: ignore[operator]
    multiples = {t.config: t.median_ns / best for t in have}  # type: ignore[operator]
    return Ranking(fastest=fastest, multiples=multiples, missing=missing)


def mape(rows: Iterable[ComparisonRow], configs: Sequence[str]) -> dict[str, float | None]:
    """Mean absolute percentage error of each config's simulated time against real time, over the
    kernels that have both and that real timing names as the sims do (the accuracy report's
    pairs, each error bounded); `None` for a config with no such kernel."""
    rows = list(rows)
    return {cfg: accuracy(pairs_of(rows, cfg)).mape_pct for cfg in configs}


def stand_in_reason(run: RunSummary | None, sims: Iterable[SimSummary]) -> str | None:
    """Why these numbers come from the stand-in rather than a simulation of this trace, or None.

    The server says so with `replay`; otherwise a sim that finished a different number of kernels
    than the trace has (more than it has, or succeeded short of it) replayed another log. The sample
    run is different: its recorded results are real Accel-Sim output of the sample trace itself, so
    its configs compare fine (see `sample_note`).
    """
    if run is not None and run.sample:
        return None
    if run is not None and run.replay:
        return "the sims replayed a recorded Accel-Sim log"
    for sim in sims:
        if sim.kernels_total and (
            sim.kernels_done > sim.kernels_total
            or (sim.state == "succeeded" and sim.kernels_done != sim.kernels_total)
        ):
            return (
                f"a sim finished {sim.kernels_done} of the trace's "
                f"{plural(sim.kernels_total, 'kernel')}, so it replayed another log"
            )
    return None


SAMPLE_RUN_NOTE = (
    "sample run: real Accel-Sim results of the sample trace, recorded elsewhere and replayed here"
)


def sample_note(run: RunSummary | None) -> str | None:
    if run is None or not run.sample:
        return None
    # Cancelling is worth a word only while it could apply (the replay still going).
    return SAMPLE_RUN_NOTE + ("; cancelling it changes nothing" if run.state == "active" else "")


def trace_note(run: RunDetail | None) -> str | None:
    """What happened to a run's trace, when it is gone: a run starts on a ready trace only, so a
    failed one is a deleted trace (the server's record says when, and that a trace uploaded since
    under the same id is another trace)."""
    if run is None or run.trace.state != "failed":
        return None
    return f"Trace: {run.trace.error or 'no longer exists'}."


KERNEL_ORDERS = ("trace", "time", "spread")  # the kernels view's orders, as `o` cycles them


def spread_pct(times: Iterable[float | None]) -> float | None:
    """How much times of one kernel disagree: (slowest - fastest) / fastest, in %, over the
    times that are there and above zero (a zero time is no measurement); None below two."""
    have = [t for t in times if t is not None and t > 0]
    return (max(have) - min(have)) / min(have) * 100.0 if len(have) > 1 else None


def kernel_spread(row: ComparisonRow) -> float | None:
    """How much the configs disagree on a kernel (spread_pct of its times)."""
    return spread_pct(row.sim_ns.values())


def kernel_share(row: ComparisonRow, totals: Mapping[str, float]) -> float | None:
    """The kernel's share of its config's total, in %, for the config with the largest share."""
    shares = [v / totals[cfg] * 100.0 for cfg, v in row.sim_ns.items() if v is not None and totals.get(cfg)]
    return max(shares) if shares else None


def order_kernel_rows(rows: Sequence[ComparisonRow], order: str) -> list[ComparisonRow]:
    """`trace`: as launched; `time`: the longest (on its slowest config) first; `spread`: the
    kernels the configs disagree on most first."""
    if order == "time":
        return sorted(rows, key=lambda r: -max((v for v in r.sim_ns.values() if v is not None), default=0.0))
    if order == "spread":
        return sorted(rows, key=lambda r: -(kernel_spread(r) or 0.0))
    return list(rows)


def failure_reasons(
    kernels: Iterable[KernelStat], sims: Mapping[str, SimSummary]
) -> dict[int, dict[str, str]]:
    """Kernel position -> config -> the simulator's reason, for the kernels it failed on."""
    out: dict[int, dict[str, str]] = {}
    for k in kernels:
        sim = sims.get(k.sim_id)
        if k.failed is not None and sim is not None:
            out.setdefault(k.kernel_index, {}).setdefault(sim.label, k.failed)
    return out
