"""How a run reads, in the script commands and the UI alike: its mark (sample, stand-in), its
entries, its sims, its time, and the run screen's header and banner. One wording, so `cascade runs`
and the Runs list never describe the same run differently. Pure: no Textual (the markup is Rich's)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from rich.markup import escape
from rich.text import Text

from cascade_core.models import RunEntry, RunSummary, SimState

from . import compare
from .formatting import STATE_DISPLAY_ORDER, human_duration, run_seconds, run_took, state_label
from .reducer import RunModel
from .simrows import run_duration


def run_mark(run: RunSummary) -> str:
    """`sample` (recorded results replayed), `stand-in` (the stand-in simulator ran), or ''."""
    return "sample" if run.sample else ("stand-in" if run.replay else "")


def entries_label(entries: Sequence[RunEntry]) -> str:
    """`SM7_QV100 × 2, SM7_TITANV × 1`: each config with its number of replicas (`× 1 in 3
    shards`: a replica split into sims that run at once; `with power`: AccelWattch on)."""
    return ", ".join(
        f"{e.variant} × {e.count}"
        + (f" in {e.shards} shards" if e.shards > 1 else "")
        + (" with power" if e.power else "")
        for e in entries
    )


def sims_text(counts: Mapping[SimState, int] | Mapping[str, int]) -> str:
    """`2/3 succeeded, 1 failed`: succeeded of all, then every other state present, live work
    first (the Runs list shows the same two parts in two columns: `run_progress`, `sims_count_text`)."""
    others = [f"{counts.get(s)} {s}" for s in STATE_DISPLAY_ORDER if s != "succeeded" and counts.get(s)]
    return ", ".join([f"{run_progress(counts)} succeeded", *others])


def sims_count_text(counts: Mapping[SimState, int]) -> str:
    """The sims not (yet) succeeded, live work and problems first; succeeded ones are counted in
    the `succeeded` column, so they are named here only when nothing else is left."""
    parts = [f"{counts[s]} {s}" for s in STATE_DISPLAY_ORDER if s != "succeeded" and counts.get(s)]
    return ", ".join(parts) or (f"{counts['succeeded']} succeeded" if counts.get("succeeded") else "")


def run_progress(counts: Mapping[SimState, int] | Mapping[str, int]) -> str:
    """Succeeded sims out of all: a cancelled or failed run never looks complete. (No bar: at
    80 columns the run's duration needs the room more, and `sims` names what is not done.)"""
    return f"{counts.get('succeeded', 0)}/{sum(counts.values())}"


def run_time(r: RunSummary, now: datetime) -> str:
    """The `time` column: how long a finished run took, or an active one has run so far; `-`
    for the sample run (its results were recorded elsewhere: the replay's seconds mean nothing)."""
    if r.sample:
        return "-"
    return human_duration(run_seconds(r.created_at, r.finished_at if r.state != "active" else None, now))


def run_took_text(r: RunSummary, now: datetime) -> str:
    """`took 4m12s`, `4m12s so far` (`, no sim started yet` while waiting for a slot, the
    cluster or a person), or `recorded results` for the sample run (never `took 0s`)."""
    if r.sample:
        return "recorded results"
    finished = r.finished_at if r.state != "active" else None
    timing = run_took(r.created_at, finished, now)
    if r.started_at is None and finished is None:
        timing += ", no sim started yet"
    return timing


CONNECTION_BADGES = {
    "live": "[b green]● LIVE[/]",
    "connecting": "[yellow]○ CONNECTING[/]",
    "reconnecting": "[b yellow]◌ RECONNECTING[/]",
    "offline": "[b red]✘ OFFLINE[/]",
}


def connection_badge(connection: str, detail: str = "", finished: bool = False) -> str:
    """The run screen's connection badge: `● LIVE` while the event stream follows a run still
    going; none on a finished run (nothing is live there: its state says it is over), unless the
    stream is down, which is worth saying on any run."""
    if connection == "live" and finished:
        return ""
    badge = CONNECTION_BADGES.get(connection, connection)
    return badge + (f" [dim]({detail})[/]" if detail else "")


def header_text(
    badge: str, run_id: str, model: RunModel, state_filter: str, now: datetime, width: int | None = None
) -> str:
    """The run screen's header line: the connection badge, then the run's state and sims. In
    `width` cells the run id (also in the title bar) is left out when the line is too long, so
    the trace id is cut only when it alone does not fit (then with `…`: the header's CSS)."""
    lead = f"{badge}  " if badge else ""
    if model.run is None:
        return f"{lead}[b]{run_id}[/]"
    counts = model.sim_counts()
    count_text = " · ".join(f"{counts[s]} {s}" for s in STATE_DISPLAY_ORDER if counts.get(s))
    # Most important first, so an 80-column terminal cuts the least useful part: the
    # count of every state before how long it took, the trace id after, the run id (also
    # in the title bar) last.
    only = f"  [reverse]showing {state_filter}[/]" if state_filter != "all" else ""
    # A sample run's sims replay recorded results: their times here mean nothing.
    took = (
        "recorded results"
        if model.run.sample
        else run_duration(model.run.created_at, model.sims.values(), now)
    )
    power = "  power" if any(e.power for e in model.run.entries) else ""  # AccelWattch: slower sims
    text = (
        f"{lead}{state_label(model.state())}  {count_text}{only}  {took}{power}  trace "
        f"[b]{escape(model.run.trace_id)}[/]"
    )
    with_id = f"{text}  [b]{model.run.id}[/]"
    return text if width is not None and Text.from_markup(with_id).cell_len > width else with_id


def banner_text(model: RunModel) -> str:
    """The run screen's warning under the header: stand-in numbers, a sample run, the trace."""
    summary = model.summary()
    reason = compare.stand_in_reason(summary, model.sims.values()) if model.run else None
    if reason:
        text = stand_in_banner(reason)
    else:
        text = compare.sample_note(summary) or ""
    if note := compare.trace_note(model.run):
        text = f"{text}\n{note}" if text else note
    return text


def stand_in_banner(reason: str, whose: str = "") -> str:
    """The warning over stand-in numbers, one wording wherever they show (the run screen, the
    compare screens); `whose`: the runs it applies to, when only some are."""
    # Written whole, as the agent prompt quotes it (tests/agent checks the two agree).
    text = f"⚠ Stand-in numbers, not a simulation of this trace: {reason}."
    return text.replace("numbers,", f"numbers ({whose}),", 1) if whose else text
