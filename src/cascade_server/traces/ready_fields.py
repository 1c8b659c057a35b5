"""The fields a trace gets when it becomes ready, read from its processed files: its kernels, how
many the simulator will run, its arch, whether it has real timing, its size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cascade_core.trace_kernels import listed_kernels, read_kernels
from cascade_core.trace_layout import has_real_timing, has_step_timeline

from .trace_arch import arch_fields


def _dir_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def describe_processed(trace_dir: Path, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """The fields a trace gets when it becomes ready (blocking: run in a thread). The timing
    files are found where metadata.json lists them, as `/comparison` and the worker find them."""
    listed = listed_kernels(trace_dir)
    return {
        "kernels": read_kernels(trace_dir),
        # what the simulator will run: the kernels kernelslist.g names (files it does not name are
        # never simulated; while uploading, kernel_count counted the kernel files)
        **({"kernel_count": len(listed)} if listed is not None else {}),
        "has_real_timing": has_real_timing(trace_dir, metadata),
        "has_step_timeline": has_step_timeline(trace_dir, metadata),
        "bytes": _dir_bytes(trace_dir),
        **arch_fields(trace_dir, metadata),  # the trace's own headers decide its arch
    }
