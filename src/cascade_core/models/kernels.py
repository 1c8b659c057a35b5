"""Per-kernel results: one simulated kernel's stats, and a run's kernel-by-kernel comparison of
real and simulated time."""

from __future__ import annotations

from pydantic import Field

from .common import Model


class KernelPower(Model):
    """A kernel's power from AccelWattch (a sim with `power: true`; not in the spec)."""

    avg_w: float = Field(description="The kernel's average power, W (AccelWattch's kernel_avg_power).")
    max_w: float = Field(description="The highest power over the kernel's samples, W.")
    min_w: float = Field(description="The lowest power over the kernel's samples, W.")
    components: dict[str, float] = Field(
        default_factory=dict,
        description="Average power per AccelWattch component, W (those that are not zero): DRAMP, "
        "IDLE_COREP, CONSTP, STATICP, ... They add up to avg_w.",
    )

    def energy_j(self, time_ns: float | None) -> float | None:
        """The energy over a kernel's time, J: its average power times the time."""
        return None if time_ns is None else self.avg_w * time_ns * 1e-9


class KernelStat(Model):
    sim_id: str
    kernel_index: int
    kernel_name: str
    kernel_launch_uid: int | None = None
    gpu_sim_cycle: int | None = None
    gpu_sim_insn: int | None = None
    gpu_ipc: float | None = None
    sim_time_ns: float | None = None
    stats: dict[str, float | str] = Field(default_factory=dict)
    # Not in the spec (an addition): a shard's warm-up kernel, in that sim's own results only.
    warmup: bool = Field(default=False, exclude_if=lambda v: not v)
    # Not in the spec (an addition): a kernel the simulator failed on (the sim went on past it),
    # with the simulator's own reason; it has no results.
    failed: str | None = Field(default=None, exclude_if=lambda v: v is None)
    # Not in the spec (an addition): a kernel of a sampled sim that was not simulated takes the
    # numbers of its representative, the kernel at this trace position (scaled by their
    # instruction counts for `stratified`); null for a simulated kernel.
    estimated_from: int | None = Field(default=None, exclude_if=lambda v: v is None)
    # Not in the spec (additions): a power sim's kernel (issue 34): AccelWattch's power, and the
    # energy it comes to, J (its average power times sim_time_ns). An estimated kernel takes its
    # representative's power; null when the sim has no power or the report had none for it.
    power: KernelPower | None = Field(default=None, exclude_if=lambda v: v is None)
    energy_j: float | None = Field(default=None, exclude_if=lambda v: v is None)


class ComparisonRow(Model):
    kernel_index: int
    kernel_name: str
    real_ns: float | None = None
    sim_ns: dict[str, float | None]
    # Not in the spec (an addition): the configs whose sims the simulator failed on this kernel;
    # their `sim_ns` leaves those sims out (null when no replica simulated it).
    failed: list[str] = Field(default_factory=list, exclude_if=lambda v: not v)
    # Not in the spec (an addition): the configs whose time for this kernel is estimated from a
    # representative kernel (a sampled run), not simulated.
    estimated: list[str] = Field(default_factory=list, exclude_if=lambda v: not v)
    # Not in the spec (an addition): the kernel the sims ran at this position, when real timing
    # names another one here (or none). `real_ns` is then not this kernel's real time: no
    # accuracy figure pairs it with `sim_ns`.
    sim_kernel_name: str | None = Field(default=None, exclude_if=lambda v: v is None)


class Comparison(Model):
    has_real_timing: bool
    configs: list[str]
    rows: list[ComparisonRow]
