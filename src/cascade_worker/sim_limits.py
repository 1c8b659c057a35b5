"""The resources a sim's simulator may take, and which limit ended it. Pure: no I/O (the limits are
applied in the simulator's process by host_limits.py).

Simulator options are untrusted input: `-gpgpu_n_clusters 400` took a simulator to 1.44 GB, and a
run may start 64 sims. So every simulator process runs with:

- a memory limit (RLIMIT_AS: GPGPU-Sim's address space is its heap, measured within 1% of its peak
  RSS): an allocation past it fails, and the simulator aborts with `std::bad_alloc`;
- a CPU time limit (RLIMIT_CPU), for the whole sim: a restarted simulator (going on past a failed
  kernel) gets what its predecessors left. SIGXCPU at the limit, SIGKILL a few seconds later;
- a file size limit (RLIMIT_FSIZE) on each file it writes in its scratch directory (SIGXFSZ);
- no core files (a 9 GB core dump of an aborted simulator would fill the scratch disk).

A limit reached ends the sim, failed, saying which limit, its value and its setting. It is never
a kernel the simulator failed on: going on past it would only hit the limit again.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass

from .outcome import OutputMarkers, signal_of

# What every limit's setting is called, for the sim's error.
MEMORY_SETTING = "CASCADE_SIM_MEMORY_LIMIT_MB"
CPU_SETTING = "CASCADE_SIM_CPU_LIMIT_S"
FILE_SETTING = "CASCADE_SIM_FILE_LIMIT_MB"

# The default memory limit: this share of the memory the worker's host (or its cgroup) has,
# divided among the sims that run there at once, leaving the rest to the server, the workers and
# the system; and never below MIN_DEFAULT_MEMORY_MB, which a small sim needs (QV100: 330 MB).
MEMORY_SHARE = 0.75
MIN_DEFAULT_MEMORY_MB = 1024
# Seconds of CPU time between SIGXCPU and SIGKILL, for a simulator that ignores SIGXCPU.
CPU_KILL_AFTER_S = 5


@dataclass(frozen=True)
class SimLimits:
    """Each 0 when there is none."""

    memory_mb: int = 0
    cpu_s: float = 0.0
    file_mb: int = 0

    def cpu_left(self, used: float) -> float | None:
        """CPU seconds the next simulator may use, after its predecessors used `used`; None
        without a CPU limit."""
        return None if self.cpu_s <= 0 else max(0.0, self.cpu_s - used)


def default_memory_mb(available_bytes: int | None, slots: int) -> int:
    """MEMORY_SHARE of `available_bytes` (None: unknown) split over `slots` sims, in MiB."""
    if not available_bytes:
        return MIN_DEFAULT_MEMORY_MB
    share = int(available_bytes * MEMORY_SHARE / max(1, slots)) // 2**20
    return max(MIN_DEFAULT_MEMORY_MB, share)


def memory_words(limits: SimLimits) -> str:
    if limits.memory_mb <= 0:
        return "the simulator ran out of memory (std::bad_alloc) with no memory limit set"
    return (
        f"memory limit reached: the simulator may use {limits.memory_mb:,} MiB "
        f"({MEMORY_SETTING}={limits.memory_mb})"
    )


def cpu_words(limits: SimLimits) -> str:
    return (
        f"CPU time limit reached: the sim's simulators may use {limits.cpu_s:,g} s of CPU time "
        f"({CPU_SETTING}={limits.cpu_s:g})"
    )


def file_words(limits: SimLimits) -> str:
    return (
        f"file size limit reached: the simulator may write files of up to {limits.file_mb:,} MiB "
        f"({FILE_SETTING}={limits.file_mb})"
    )


def limit_reached(returncode: int, markers: OutputMarkers, limits: SimLimits, cpu_used: float) -> str | None:
    """Which limit ended the simulator (the sim's error), or None when none did.

    `cpu_used`: CPU seconds the sim's simulators used so far, this one included. A simulator that
    used the whole CPU budget is over it however it ended (SIGXCPU, the SIGKILL after it, or an
    exit in the same second)."""
    if returncode == 0 and markers.exit_line:
        return None
    number = signal_of(returncode)
    if limits.cpu_s > 0 and (number == signal.SIGXCPU or cpu_used >= limits.cpu_s):
        return cpu_words(limits)
    if limits.file_mb > 0 and (number == signal.SIGXFSZ or markers.file_too_large):
        return file_words(limits)
    if markers.out_of_memory:
        return memory_words(limits)
    return None
