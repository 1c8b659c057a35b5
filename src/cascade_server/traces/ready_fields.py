"""What a post-processed trace becomes when it is ready: its kernels, flags, size and arch
(`describe_processed`, blocking: run in a thread), and its real kernel times, read once in a
process of their own (real_timing_file.py) and stored with the trace."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cascade_core.models import KernelLaunch, SamplingInfo, TraceDetail
from cascade_core.real_timing import RealRow
from cascade_core.sampling import facts_of, sim_sample
from cascade_core.trace_kernels import listed_kernels, read_kernels
from cascade_core.trace_layout import has_step_timeline

from .real_timing_file import read_real_timing
from .trace_arch import arch_fields

if TYPE_CHECKING:
    from ..settings import Settings
    from ..storage import Store

log = logging.getLogger(__name__)


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
    """The fields a trace gets when it becomes ready, but its real timing (blocking: run in a
    thread). The timing files are found where metadata.json lists them, as the worker finds them."""
    listed = listed_kernels(trace_dir)
    return {
        "kernels": read_kernels(trace_dir),
        # what the simulator will run: the kernels kernelslist.g names (files it does not name are
        # never simulated; while uploading, kernel_count counted the kernel files)
        **({"kernel_count": len(listed)} if listed is not None else {}),
        "listed": listed,  # for sampling_figures, once the real timing is read (not a trace field)
        "has_step_timeline": has_step_timeline(trace_dir, metadata),
        "bytes": _dir_bytes(trace_dir),
        **arch_fields(trace_dir, metadata),  # the trace's own headers decide its arch
    }


async def ready_fields(
    trace_dir: Path, metadata: dict[str, Any] | None, timeout_s: float
) -> tuple[dict[str, Any], list[RealRow]]:
    """The ready trace's fields (`describe_processed`, with `has_real_timing` and
    `real_timing_error`) and its real timing's rows to store. Raises what describe_processed
    raises (KernelStatsError, OSError)."""
    fields = await asyncio.to_thread(describe_processed, trace_dir, metadata)
    listed = fields.pop("listed")
    timing = await read_real_timing(trace_dir, metadata, fields["kernels"], timeout_s)
    real = [(row.kernel_name, row.duration_ns) for row in timing.rows] if timing.rows else None
    fields["sampling"] = await asyncio.to_thread(sampling_figures, listed, fields["kernels"], real)
    return {**fields, **timing.trace_fields()}, timing.rows


async def refill_real_timing(
    store: Store,
    traces: Mapping[str, TraceDetail],
    directory: Callable[[str], Path],
    settings: Settings,
    save: Callable[[TraceDetail, list[RealRow]], Awaitable[None]],
) -> None:
    """Traces ready before their real timing was stored (migration 10) get it, once, from their
    real_timing.json (or lose `has_real_timing`, with the reason, when it gives none). `traces`:
    the scanner's, by id; `save`: the scanner's, which stores a trace with its rows."""
    for trace_id in await store.traces.traces_missing_real_timing():
        trace = traces.get(trace_id)
        if trace is None:
            continue
        try:
            timing = await read_real_timing(
                directory(trace_id), trace.metadata, trace.kernels, settings.postprocess_timeout_s
            )
            # Not a trace deleted (or changed) meanwhile: that would bring it back.
            if traces.get(trace_id) is trace and not store.traces.trace_being_deleted(trace_id):
                await save(trace.model_copy(update=timing.trace_fields()), timing.rows)
        except Exception:  # noqa: BLE001 - one trace's file must not stop the others'
            log.exception("trace %s: its real timing could not be read again", trace_id)
