"""A trace's real kernel times (`real_timing.json`): what of the file is believed, and when the
file is not this trace's at all. The server reads the file once, when the trace becomes ready,
and stores its rows (`/comparison` and `/api/accuracy` answer from those); these rules are that
reading. Pure: the standard library and the kernel-name rule of the timeline import.

A row is a kernel of the file, in kernel-id order: `/comparison` pairs the i-th row with the
i-th kernel the sims finished, and a pair counts only when both name the same kernel
(`same_kernel`): a real time of another kernel is never compared, whatever its position.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

from cascade_core.demangle import demangle
from cascade_core.timeline.align import name_key

# The longest real kernel duration believed (ns): a day. Anything longer, and any value that is not
# a finite number (Infinity, NaN, a bool, a 400-digit integer), is an unknown duration.
MAX_REAL_DURATION_NS = 86_400e9
# The shortest believed: 1 ns, a profiler's resolution (real kernels take a microsecond or more).
# Below it, an error against the time runs to hundreds of digits (1e-300 ns real against 2 µs
# simulated), so such a duration is unknown too.
MIN_REAL_DURATION_NS = 1.0


class RealRow(NamedTuple):
    kernel_id: float  # as the file gives it (the tracer's kernel-N), or the row's position
    kernel_name: str | None
    duration_ns: float | None


class RealTimingError(ValueError):
    """The file gives no real timing this trace can use; the message is one line."""


def real_duration(value: Any) -> float | None:
    """A real kernel duration (ns) as `real_timing.json` gives it, or None when it is not a finite
    number from MIN_REAL_DURATION_NS to MAX_REAL_DURATION_NS (Infinity, NaN, bools, text, huge
    integers, zero, negatives)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        duration = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    ok = math.isfinite(duration) and MIN_REAL_DURATION_NS <= duration <= MAX_REAL_DURATION_NS
    return duration if ok else None


def _kernel_id(value: Any, position: int) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return position
    try:
        number = float(value)
    except OverflowError:
        return position
    return number if math.isfinite(number) else position


def parse_real_timing(doc: Any) -> list[RealRow]:
    """`real_timing.json`, parsed, -> its rows sorted by kernel id.

    A list of kernel objects, or an object holding one under `kernels`; each kernel has
    `kernel_id` (or `id`), `duration_ns` and optionally `kernel_name`/`name`. A duration that is
    not a sane number (real_duration) is unknown (None), like a missing one; a kernel id that is not
    a finite number is the kernel's position; an item that is not an object is left out.
    RealTimingError when the document holds no list of kernels at all."""
    items = doc.get("kernels") if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise RealTimingError("real_timing.json holds no list of kernels (a list, or one under `kernels`)")
    rows = []
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        name = item.get("kernel_name", item.get("name"))
        rows.append(
            RealRow(
                _kernel_id(item.get("kernel_id", item.get("id", position)), position),
                name if isinstance(name, str) and name else None,
                real_duration(item.get("duration_ns")),
            )
        )
    rows.sort(key=lambda row: row.kernel_id)
    return rows


def _trace_name(names: Mapping[int, str], kernel_id: float) -> str | None:
    return names.get(int(kernel_id)) if kernel_id.is_integer() else None


def named_rows(rows: Sequence[RealRow], trace_names: Mapping[int, str]) -> list[RealRow]:
    """A row without a name takes the name of the trace's kernel with its id (the tracer's
    kernel-N), when the trace lists one: the file times that kernel."""
    return [
        row
        if row.kernel_name is not None
        else row._replace(kernel_name=_trace_name(trace_names, row.kernel_id))
        for row in rows
    ]


def timing_problem(rows: Sequence[RealRow], trace_names: Mapping[int, str]) -> str | None:
    """Why the rows (named_rows) are no real timing of this trace, in one line, or None: no kernel
    has a known duration, or no row names the trace's kernel of its id (the file times another
    workload; with a trace that lists no kernels, this is not checked)."""
    timed = [row for row in rows if row.duration_ns is not None]
    if not timed:
        return "real_timing.json has no kernel with a known duration (duration_ns from 1 ns to a day)"
    if not trace_names:
        return None
    compared = [row for row in timed if _trace_name(trace_names, row.kernel_id) is not None]
    if compared and not any(
        same_kernel(row.kernel_name, _trace_name(trace_names, row.kernel_id)) for row in compared
    ):
        first = compared[0]
        return (
            f"real_timing.json names none of the trace's kernels (kernel {first.kernel_id:g} is "
            f"{first.kernel_name!r} there, {_trace_name(trace_names, first.kernel_id)!r} in the trace): "
            "it times another workload"
        )
    return None


@lru_cache(maxsize=65536)
def _key(name: str) -> str:
    return name_key(name, demangle)


def same_kernel(a: str | None, b: str | None) -> bool:
    """Whether two names are one kernel, mangled or not (`_Z4gemmIfEvPT_` and `void gemm<float>(float*)`
    are): unknown names never match."""
    if not a or not b:
        return False
    return a == b or _key(a) == _key(b)
