"""The host's side of a sim's limits (sim_limits.py): how much memory this worker's host has, the
CPU time the simulators used, and the rlimits set in each simulator's process before it runs."""

from __future__ import annotations

import math
import os
import resource
from collections.abc import Callable
from pathlib import Path

from .sim_limits import CPU_KILL_AFTER_S, SimLimits

CGROUP_ROOT = Path("/sys/fs/cgroup")


def available_memory_bytes() -> int | None:
    """The host's physical memory, or what this process's cgroup may use when that is less (a
    container's limit, a Slurm job's `--mem`); None when neither can be read."""
    try:
        physical: int | None = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        physical = None
    limits = [n for n in (physical, cgroup_memory_limit()) if n]
    return min(limits) if limits else None


def cgroup_memory_limit() -> int | None:
    """The lowest `memory.max` (cgroup v2) or `memory.limit_in_bytes` (v1) on this process's
    cgroup path, or None when it has none."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    found: list[int] = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # v2: one hierarchy
            base, name = CGROUP_ROOT, "memory.max"
        elif "memory" in controllers.split(","):
            base, name = CGROUP_ROOT / "memory", "memory.limit_in_bytes"
        else:
            continue
        where = base / path.lstrip("/")
        while True:  # a parent's limit bounds its children
            try:
                text = (where / name).read_text().strip()
            except OSError:
                text = ""
            if text.isdigit() and int(text) < 2**60:  # v1 says "no limit" with a huge number
                found.append(int(text))
            if where == base or base not in where.parents:
                break
            where = where.parent
    return min(found) if found else None


def children_cpu_seconds() -> float:
    """User and system CPU time of this process's finished (waited-for) children: the worker's
    only children are its simulators."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def child_limits(limits: SimLimits, cpu_left: float | None) -> Callable[[], None]:
    """What the simulator's process runs between fork and exec (`preexec_fn`): its rlimits. Every
    value is worked out here, in the worker, so the child only makes system calls (a child of a
    threaded parent must not take locks). None is set above the worker's own hard limit, which a
    process cannot raise."""
    wanted: list[tuple[int, int, int]] = [(resource.RLIMIT_CORE, 0, 0)]
    if limits.memory_mb > 0:
        size = limits.memory_mb * 2**20
        wanted.append((resource.RLIMIT_AS, size, size))
    if cpu_left is not None:
        soft = max(1, math.ceil(cpu_left))
        wanted.append((resource.RLIMIT_CPU, soft, soft + CPU_KILL_AFTER_S))
    if limits.file_mb > 0:
        size = limits.file_mb * 2**20
        wanted.append((resource.RLIMIT_FSIZE, size, size))
    settings = []
    for which, soft, hard in wanted:
        _, ceiling = resource.getrlimit(which)
        if ceiling != resource.RLIM_INFINITY:
            soft, hard = min(soft, ceiling), min(hard, ceiling)
        settings.append((which, (soft, hard)))
    setrlimit = resource.setrlimit

    def apply() -> None:
        for which, values in settings:
            setrlimit(which, values)

    return apply
