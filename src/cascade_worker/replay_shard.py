"""The stand-in's shard: only the recording's blocks for the kernels a shard simulates.

A recorded log is its config echo (up to the first `Processing kernel` line, memcpys included),
one block per kernel (from its `Processing kernel` line through the end of its stats block,
`gpgpu_silicon_slowdown = ...`), then the closing lines (the exit line among them). A shard's
replay keeps the echo, the blocks of kernels `start`..`last` (0-based, inclusive) and the close.
Pure."""

from __future__ import annotations

import re
from collections.abc import Sequence

_PROCESSING = re.compile(r"^Processing kernel ")
_STATS_END = re.compile(r"^gpgpu_silicon_slowdown = ")


def select_kernels(lines: Sequence[str], start: int, last: int) -> list[str]:
    starts = [i for i, line in enumerate(lines) if _PROCESSING.match(line)]
    if not starts:
        return list(lines)
    ends = [i for i, line in enumerate(lines) if _STATS_END.match(line)]
    close = ends[-1] + 1 if ends and ends[-1] >= starts[-1] else len(lines)
    bounds = [*starts[1:], close]
    out = list(lines[: starts[0]])
    for position, (begin, end) in enumerate(zip(starts, bounds)):
        if start <= position <= last:
            out.extend(lines[begin:end])
    out.extend(lines[close:])
    return out


def parse_range(text: str) -> tuple[int, int]:
    """`--kernels START-LAST` (0-based positions, inclusive)."""
    first, _, last = text.partition("-")
    start, end = int(first), int(last or first)
    if start < 0 or end < start:
        raise ValueError(f"not a kernel range: {text!r}")
    return start, end
