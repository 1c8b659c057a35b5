"""The time a simulator says a state change happened (`Heartbeat.at`), bounded before it is
stored as the sim's started_at/finished_at: a worker's clock may be off, or its report mangled."""

from __future__ import annotations

from datetime import UTC, datetime


def reported_time(at: datetime | None, now: datetime, not_before: datetime) -> datetime:
    """`at` (a naive time read as UTC) within [`not_before`, `now`]; `now` without one. The
    sim's own time keeps a server outage out of its elapsed time; the bounds keep a wrong clock
    from dating it in the future or before it existed."""
    if at is None:
        return now
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return max(min(at, now), min(not_before, now))
