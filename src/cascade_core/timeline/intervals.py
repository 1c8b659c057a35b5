"""Interval arithmetic for timelines."""

from __future__ import annotations

from collections.abc import Iterable


def union_length(intervals: Iterable[tuple[float, float]]) -> float:
    """Total length covered by [start, end) intervals (overlaps counted once): GPU busy time."""
    total = 0.0
    current_start = current_end = None
    for start, end in sorted(intervals):
        if current_end is None or start > current_end:
            if current_end is not None and current_start is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        elif end > current_end:
            current_end = end
    if current_end is not None and current_start is not None:
        total += current_end - current_start
    return total
