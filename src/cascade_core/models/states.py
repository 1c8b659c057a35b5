"""The state machines: a trace's, a sim's and a run's states, a sim's moves, and `run_state()`
(a run's state is derived from its sims', never stored). Spec 003, "Sim states"."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

TraceState = Literal["uploading", "processing", "ready", "failed"]
SimState = Literal["pending", "launching", "running", "lost", "succeeded", "failed", "cancelled"]
RunState = Literal["active", "succeeded", "partial", "failed", "cancelled"]

SIM_STATES: tuple[SimState, ...] = (
    "pending",
    "launching",
    "running",
    "lost",
    "succeeded",
    "failed",
    "cancelled",
)
TERMINAL_SIM_STATES: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})

# Every move a sim may make; anything not listed is ignored (spec 003, "Sim states").
SIM_TRANSITIONS: dict[str, frozenset[str]] = {
    "pending": frozenset({"launching", "failed", "cancelled"}),
    "launching": frozenset({"running", "lost", "succeeded", "failed", "cancelled"}),
    "running": frozenset({"lost", "succeeded", "failed", "cancelled"}),
    "lost": frozenset({"running", "succeeded", "failed", "cancelled"}),
    "succeeded": frozenset(),
    "failed": frozenset(),
    "cancelled": frozenset(),
}


# Every move a trace makes, as the server's scanner makes them (traces/scanner.py): arriving files
# then the post-processor; `ready` is final (a deleted trace leaves the list, and the runs made on
# it show a `failed` record of it); a trace that failed for lack of disk space is processed again
# once the disk has room (`failed` -> `processing`), any other failure is final.
TRACE_TRANSITIONS: dict[str, frozenset[str]] = {
    "uploading": frozenset({"processing", "failed"}),
    "processing": frozenset({"ready", "failed"}),
    "ready": frozenset(),
    "failed": frozenset({"processing"}),
}


def can_transition(current: str, target: str) -> bool:
    return target in SIM_TRANSITIONS.get(current, frozenset())


def run_state(sim_states: Iterable[str]) -> RunState:
    """Derive a run's state from its sims' states (never stored)."""
    states = list(sim_states)
    if not states or any(s not in TERMINAL_SIM_STATES for s in states):
        return "active"
    if all(s == "succeeded" for s in states):
        return "succeeded"
    if "succeeded" in states:
        return "partial"
    if all(s == "failed" for s in states):
        return "failed"
    return "cancelled"
