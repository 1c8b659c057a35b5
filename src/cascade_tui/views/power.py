"""Power and energy as the UI shows them (issue 34: a run entry's `power`, AccelWattch): watts and
joules in a unit that reads, each kernel's power per config for the kernels view, and a sim's
energy over the kernels that have power. Pure (no Textual, no I/O).

A kernel's energy is its average power times its simulated time (`KernelStat.energy_j`, the
server's); a config's average power is its energy over the time of the kernels that have power,
so a long kernel weighs more than a short one, as it does on the GPU."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from cascade_core.models import KernelStat, SimSummary

# Measured with benchmarks/bench_power.py (real simulator, the demo trace on SM7_QV100): 2.2x to
# 2.7x the CPU time of the same sim without power, same cycles.
COST = "about 2-3x the simulation time"
NO_POWER = "—"  # a power sim's kernel the report had no power for


def watts(value: float) -> str:
    """`57.3 W`."""
    return f"{value:.1f} W"


def joules(value: float) -> str:
    """`1.23 mJ`, `285 µJ`: three significant digits in the unit that reads best (a kernel is
    µJ to mJ, a whole trace mJ to J)."""
    for unit, scale in (("J", 1.0), ("mJ", 1e-3), ("µJ", 1e-6)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} nJ"


@dataclass(frozen=True)
class PowerCell:
    """One config's power on one kernel: the median average power over its replicas that have it;
    None for a power sim's kernel without power (shown `—`)."""

    avg_w: float | None
    estimated: bool = False  # taken from a representative kernel (sampling), as its time is

    def text(self) -> str:
        if self.avg_w is None:
            return NO_POWER
        return ("~" if self.estimated else "") + watts(self.avg_w)


def kernel_power(
    sims: Mapping[str, SimSummary], kernels: Iterable[KernelStat]
) -> dict[int, dict[str, PowerCell]]:
    """Kernel position -> config (a sim's label) -> its power there, for the kernels of power sims
    that have a time (a kernel the simulator failed on has neither); empty when no sim has power."""
    found: dict[int, dict[str, list[KernelStat]]] = {}
    for stat in kernels:
        sim = sims.get(stat.sim_id)
        # A kernel the simulator failed on has neither time nor power; a shard's warm-up kernel's
        # power is dropped, as its stats are.
        if sim is None or stat.failed is not None or stat.warmup or not (sim.power or stat.power is not None):
            continue
        found.setdefault(stat.kernel_index, {}).setdefault(sim.label, []).append(stat)
    out: dict[int, dict[str, PowerCell]] = {}
    for index, by_config in found.items():
        for config, stats in by_config.items():
            have = [s for s in stats if s.power is not None]
            cell = PowerCell(
                statistics.median(s.power.avg_w for s in have if s.power is not None) if have else None,
                any(s.estimated_from is not None for s in have),
            )
            out.setdefault(index, {})[config] = cell
    return out


def has_power(cells: Mapping[int, Mapping[str, PowerCell]]) -> bool:
    """Some kernel has power: the kernels view shows a power column."""
    return any(cell.avg_w is not None for row in cells.values() for cell in row.values())


@dataclass(frozen=True)
class SimEnergy:
    """A sim's energy over its kernels with power, and what that is over."""

    energy_j: float
    time_ns: float  # the simulated time of those kernels
    without: int  # its kernels with a time but no power (the total leaves them out)

    @property
    def avg_w(self) -> float | None:
        return self.energy_j / (self.time_ns * 1e-9) if self.time_ns > 0 else None


def sim_energies(
    kernels: Iterable[KernelStat], owner: Mapping[str, str] | None = None
) -> dict[str, SimEnergy]:
    """Sim id (its replica's, through `owner`, for shards) -> its energy; only sims some kernel of
    which has power."""
    owner = owner or {}
    energy: dict[str, float] = {}
    time: dict[str, float] = {}
    without: dict[str, int] = {}
    for stat in kernels:
        sim_id = owner.get(stat.sim_id, stat.sim_id)
        if stat.warmup:
            continue  # its power is dropped, as its stats are
        if stat.energy_j is not None and stat.sim_time_ns is not None:
            energy[sim_id] = energy.get(sim_id, 0.0) + stat.energy_j
            time[sim_id] = time.get(sim_id, 0.0) + stat.sim_time_ns
        elif stat.sim_time_ns is not None and stat.failed is None:
            without[sim_id] = without.get(sim_id, 0) + 1
    return {sim_id: SimEnergy(energy[sim_id], time[sim_id], without.get(sim_id, 0)) for sim_id in energy}
