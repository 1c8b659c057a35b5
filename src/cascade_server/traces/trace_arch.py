"""Which GPU arch a trace was captured on, by its own word: the `-binary version = 86` line of its
kernel traces' headers (the SASS the tracer saw), against what `metadata.json` claims.

The trace's header decides. metadata.json may say the same or nothing (then the header's arch is
the trace's); a `trace_gpu_arch` that contradicts it fails the trace, naming both, since a run on
the claimed arch's configs would simulate SASS that arch cannot run."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from cascade_core.bounded_read import DECOMPRESS_ERRORS, TooLargeError, read_bounded
from cascade_core.trace_inputs import TraceFormatError, kernel_files
from cascade_core.trace_kernels import KernelStatsError, header_lines
from cascade_core.trace_limits import KERNELSLIST_MAX_BYTES

_BINARY_VERSION = re.compile(r"-binary version = (\d+)\s*\Z")


def arch_from_header(lines: list[str]) -> str | None:
    """`sm_86` from a header's `-binary version = 86`, or None when it has none."""
    for line in lines:
        if m := _BINARY_VERSION.match(line):
            return f"sm_{int(m[1])}"
    return None


def arch_problem(claimed: Any, traced: str) -> str | None:
    """Why metadata.json's `trace_gpu_arch` cannot stand beside the header's arch, or None."""
    if not isinstance(claimed, str) or not claimed or claimed == traced:
        return None
    return (
        f"metadata.json says trace_gpu_arch {claimed!r}, but the trace's kernels were captured "
        f"for {traced} (-binary version in their headers): fix or drop trace_gpu_arch"
    )


def traced_arch(trace_dir: Path) -> str | None:
    """The arch the first kernel trace `traces/kernelslist.g` names says it was captured for
    (blocking; None when the trace's headers do not say)."""
    try:
        text = read_bounded(
            trace_dir / "traces" / "kernelslist.g", KERNELSLIST_MAX_BYTES, "traces/kernelslist.g"
        )
        names = kernel_files(text.decode("utf-8", errors="replace"))
    except (OSError, TooLargeError, TraceFormatError):
        return None  # the kernel reader reports these
    for name in names[:1]:
        path = trace_dir / name
        try:
            return arch_from_header(header_lines(path, name)) if path.is_file() else None
        except TooLargeError as exc:
            raise KernelStatsError(str(exc)) from None
        except DECOMPRESS_ERRORS as exc:
            raise KernelStatsError(f"{name}: corrupt compressed data ({exc or type(exc).__name__})") from None
    return None


def arch_fields(trace_dir: Path, metadata: dict[str, Any] | None) -> dict[str, Any]:
    """The `trace_gpu_arch` a trace gets when it becomes ready (empty when its headers do not
    say); raises KernelStatsError when metadata.json contradicts them."""
    traced = traced_arch(trace_dir)
    if traced is None:
        return {}
    if problem := arch_problem((metadata or {}).get("trace_gpu_arch"), traced):
        raise KernelStatsError(problem)
    return {"trace_gpu_arch": traced}
