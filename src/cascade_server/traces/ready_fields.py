"""The fields a trace gets when it becomes ready, read from its processed files: its kernels, how
many the simulator will run, its arch, whether it has real timing, its size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cascade_core.models import KernelLaunch, SamplingInfo
from cascade_core.sampling import facts_of, sim_sample
from cascade_core.trace_kernels import listed_kernels, read_kernels
from cascade_core.trace_layout import has_real_timing, has_step_timeline, load_real_timing

from .trace_arch import arch_fields


def _dir_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def sampling_figures(
    listed: list[str] | None, kernels: list[KernelLaunch], real: list[tuple[str | None, float | None]] | None
) -> list[SamplingInfo]:
    """What each sampling method would simulate of the trace (the New run screen and `cascade run
    start` show it before a launch)."""
    if not listed:
        return []
    facts = facts_of(listed, kernels, real)
    return [sim_sample(method, facts).info for method in ("identical", "stratified")]


def describe_processed(trace_dir: Path, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """The fields a trace gets when it becomes ready (blocking: run in a thread). The timing
    files are found where metadata.json lists them, as `/comparison` and the worker find them."""
    listed = listed_kernels(trace_dir)
    kernels = read_kernels(trace_dir)
    return {
        "kernels": kernels,
        "sampling": sampling_figures(listed, kernels, load_real_timing(trace_dir, metadata)),
        # what the simulator will run: the kernels kernelslist.g names (files it does not name are
        # never simulated; while uploading, kernel_count counted the kernel files)
        **({"kernel_count": len(listed)} if listed is not None else {}),
        "has_real_timing": has_real_timing(trace_dir, metadata),
        "has_step_timeline": has_step_timeline(trace_dir, metadata),
        "bytes": _dir_bytes(trace_dir),
        **arch_fields(trace_dir, metadata),  # the trace's own headers decide its arch
    }
