"""Error statistics of simulated against real values (the `summary` of `cascade compare`)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

ERROR_FIELDS = ("mean_error", "mean_abs_error", "p50_abs_error", "p95_abs_error")


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between closest ranks (numpy's
    default), so p50 is the median."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of no values")
    rank = (len(ordered) - 1) * q / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def error_pct(real: float | None, sim: float | None) -> float | None:
    """(sim - real) / real in percent; None when either is missing or real is 0."""
    if real is None or sim is None or not real:
        return None
    return (sim - real) / real * 100.0


def error_summary(pairs: Sequence[tuple[float | None, float | None]]) -> dict[str, Any]:
    """`count` pairs with both values, and the mean / mean absolute / p50 / p95 absolute error of
    sim - real, in the unit and in percent of real; every statistic null without a pair."""
    both = [(real, sim) for real, sim in pairs if real is not None and sim is not None]
    errors = [sim - real for real, sim in both]
    pcts = [e for real, sim in both if (e := error_pct(real, sim)) is not None]
    summary: dict[str, Any] = {"count": len(both)}
    for suffix, values in (("", errors), ("_pct", pcts)):
        absolute = [abs(v) for v in values]
        summary.update(
            {
                f"mean_error{suffix}": statistics.fmean(values) if values else None,
                f"mean_abs_error{suffix}": statistics.fmean(absolute) if values else None,
                f"p50_abs_error{suffix}": percentile(absolute, 50) if values else None,
                f"p95_abs_error{suffix}": percentile(absolute, 95) if values else None,
            }
        )
    order = ["count", *ERROR_FIELDS, *(f + "_pct" for f in ERROR_FIELDS)]
    return {key: summary[key] for key in order}


def pct_text(value: float | None, *, signed: bool = False, digits: int = 2) -> str:
    """A percentage for people; "n/a" where nothing was compared (a null statistic), never 0."""
    if value is None:
        return "n/a"
    return f"{value:+.{digits}f}%" if signed else f"{value:.{digits}f}%"
