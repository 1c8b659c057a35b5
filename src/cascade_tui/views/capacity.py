"""What the New run screen says of where a run's sims will go: how many start now and how many
wait (for a local slot, for a person, or in the cluster's queue), from `GET /api/launcher`.

Pure: no Textual, no I/O.
"""

from __future__ import annotations

from cascade_core.models import LauncherStatus

from .formatting import plural


def start_plan(status: LauncherStatus | None, sims: int) -> str:
    """`3 start now, 5 wait for a slot (4 slots, 1 busy)`; empty when there is nothing to say
    (no sims picked, or a server that does not report its launcher)."""
    if status is None or sims <= 0:
        return ""
    if status.name == "local" and status.slots is not None:
        # Sims already queued go first: a slot frees for them before it frees for this run.
        free = max(0, status.slots - status.running - status.queued)
        now = min(sims, free)
        wait = sims - now
        load = f"{plural(status.slots, 'slot')}, {status.running} busy"
        if status.queued:
            load += f", {status.queued} queued"
        if not wait:
            return f"{_all(sims, 'starts', 'start')} now ({load})"
        if not now:
            return f"{_all(sims, 'waits', 'wait')} for a slot ({load})"
        return f"{now} start now, {wait} wait for a slot ({load})"
    if status.name == "slurm":
        partition = f"partition {status.partition}" if status.partition else "the default partition"
        return (
            f"{_all(sims, 'goes', 'go')} to Slurm's queue, {partition} (Cascade's jobs there: "
            f"{status.running} running, {status.queued} waiting)"
        )
    if status.name == "manual":
        return (
            f"{_all(sims, 'waits', 'wait')} for you to start {'it' if sims == 1 else 'them'} "
            "with cascade worker (manual launcher)"
        )
    return ""


def _all(sims: int, one: str, many: str) -> str:
    """`the sim starts` / `all 5 start`: a sentence about every sim of the run."""
    return f"the sim {one}" if sims == 1 else f"all {sims} {many}"
