"""One kernel the log parser found: a finished stats block, or a kernel the simulator failed on.
Pure."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from cascade_core.models import INT64_MAX, INT64_MIN, KernelStat


def finite(value: float | str | None) -> float | None:
    if isinstance(value, float) and math.isfinite(value):
        return value
    return None


def as_int(value: float | str | None) -> int | None:
    """A count from the stats map: a finite float, or the first token of a string ("3 4"); None
    past a 64-bit integer (SQLite's INTEGER), which no real count reaches: a log saying
    `gpu_sim_cycle = 1e300` must still store (the value itself stays in `stats`)."""
    if isinstance(value, str):
        tokens = value.split(maxsplit=1)
        token = tokens[0] if tokens else ""
        number = int(token) if token.isascii() and token.isdigit() else None
    else:
        f = finite(value)
        number = int(f) if f is not None else None
    return number if number is not None and INT64_MIN <= number <= INT64_MAX else None


@dataclass(slots=True)
class ParsedKernel:
    """One finished stats block."""

    kernel_index: int  # 0-based completion order within the sim
    kernel_name: str  # the block's first kernel name (concurrent kernels list several)
    kernel_launch_uid: int | None  # the block's first uid
    gpu_sim_cycle: int | None
    gpu_sim_insn: int | None
    gpu_ipc: float | None  # None when missing or not finite
    sim_time_ns: float | None  # gpu_sim_cycle / core_clock_mhz * 1000
    stats: dict[str, float | str] = field(default_factory=dict)
    # After a restart (or for a failed kernel) the parser knows the kernel's trace position
    # itself: `kernel_index` is that position, and the sim's shard placement does not apply.
    placed: bool = False
    failed: str | None = None  # a kernel the simulator failed on: the reason, and no results
    estimated_from: int | None = None  # a sampled sim's kernel taking a representative's numbers

    def to_stat(self, sim_id: str) -> KernelStat:
        return KernelStat(
            sim_id=sim_id,
            kernel_index=self.kernel_index,
            kernel_name=self.kernel_name,
            kernel_launch_uid=self.kernel_launch_uid,
            gpu_sim_cycle=self.gpu_sim_cycle,
            gpu_sim_insn=self.gpu_sim_insn,
            gpu_ipc=self.gpu_ipc,
            sim_time_ns=self.sim_time_ns,
            stats=self.stats,
            failed=self.failed,
            estimated_from=self.estimated_from,
        )


def estimated(kernel: ParsedKernel, position: int, scale: float) -> ParsedKernel:
    """The row of a sampled sim's kernel that was not simulated: its representative `kernel`'s
    numbers, times `scale` (the ratio of their instruction counts; IPC unchanged), at `position`;
    a failed representative's failure, with whose it is."""

    def scaled(value: int | None) -> int | None:
        return None if value is None else round(value * scale)

    return ParsedKernel(
        kernel_index=position,
        kernel_name=kernel.kernel_name,
        kernel_launch_uid=position + 1,
        gpu_sim_cycle=scaled(kernel.gpu_sim_cycle),
        gpu_sim_insn=scaled(kernel.gpu_sim_insn),
        gpu_ipc=kernel.gpu_ipc,
        sim_time_ns=None if kernel.sim_time_ns is None else kernel.sim_time_ns * scale,
        placed=True,
        failed=None
        if kernel.failed is None
        else f"estimated from kernel #{kernel.kernel_index}, which failed in the simulator: {kernel.failed}",
        estimated_from=kernel.kernel_index,
    )
