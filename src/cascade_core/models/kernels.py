"""Per-kernel results: one simulated kernel's stats, and a run's kernel-by-kernel comparison of
real and simulated time."""

from __future__ import annotations

from pydantic import Field

from .common import Model


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
