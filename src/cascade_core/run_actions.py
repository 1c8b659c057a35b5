"""What can be done to a run: cancel it, re-run it, retry its failed sims, delete it. One rule, in
the server's words (its 409 details), for the UI (which neither offers nor asks about what the
server would refuse) and the script commands; the server's own checks (`runs.RunService`,
`storage.runs`) say the same. Pure."""

from __future__ import annotations

from typing import Literal

from cascade_core.models import TERMINAL_SIM_STATES, RunSummary

RunAction = Literal["cancel", "rerun", "retry", "delete"]


def unfinished_sims(run: RunSummary) -> int:
    return sum(n for state, n in run.sim_counts.items() if state not in TERMINAL_SIM_STATES)


def active_refusal(run_id: str) -> str:
    """Why an active run cannot be deleted (what the server's 409 says, without its route)."""
    return f"run {run_id} is active: cancel it first"


def cancel_refusal(run_id: str, unfinished: int) -> str | None:
    return None if unfinished else f"run {run_id} has no unfinished sims: nothing to cancel"


def retry_refusal(run: RunSummary) -> str | None:
    """A sharded run retries its failed sims and its cancelled shards in place (a replica's merged
    result needs every shard); any other run, its failed sims in a new run."""
    if any(entry.shards > 1 for entry in run.entries):
        if run.sim_counts.get("failed") or run.sim_counts.get("cancelled"):
            return None
        return f"run {run.id} has no failed sims or cancelled shards to retry"
    return None if run.sim_counts.get("failed") else f"run {run.id} has no failed sims to retry"


def refusal(action: RunAction | str, run: RunSummary) -> str | None:
    """Why `action` cannot be done to `run` (the server would answer 409), or None when it can."""
    if action == "cancel":
        return cancel_refusal(run.id, unfinished_sims(run))
    if action in ("rerun", "retry") and run.sample:
        return f"run {run.id} is a sample run: its results are recorded, it cannot be re-run"
    if action == "retry":
        return retry_refusal(run)
    if action == "delete" and run.state == "active":
        return active_refusal(run.id)
    return None
