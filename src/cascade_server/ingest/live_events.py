"""The live events a sim's parsed chunks make, published after the group's commit (only for
runs someone watches): per chunk, its lines, the kernels it completed, the sim's progress after
it."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from pydantic import BaseModel

from cascade_core.models import KernelEvent, KernelPowerEvent, LogEvent, SimEvent

from ..storage.codecs import chunk_lines, sim_from_row
from .parsing import ParseJob, ParseResult

# A closed gap: the seqs of the chunks that never arrived, and the sim's fields that say so.
Gap = tuple[Collection[int], dict[str, Any]]


def chunk_events(
    row: Any,
    job: ParseJob,
    result: ParseResult,
    missing: Collection[int] = (),
    sim_update: dict[str, Any] | None = None,
) -> list[BaseModel]:
    """The events of the job's chunks; `row`: the sim's row as it was before them. A chunk in
    `missing` never arrived (a closed gap): it has no `log` event, for a log event is exactly what
    the simulator sent; `sim_update` is what the sim says of it."""
    base = sim_from_row(row).model_copy(update=sim_update or {})
    events: list[BaseModel] = []
    for seq, (text, parsed) in enumerate(zip(job.chunks, result.chunks), job.next_seq):
        if seq not in missing:
            events.append(LogEvent(sim_id=job.sim_id, lines=chunk_lines(text)))
        events.extend(KernelEvent(stat=stat) for stat in parsed.kernels)
        if parsed.power:
            events.append(KernelPowerEvent(sim_id=job.sim_id, kernels=parsed.power))
        events.append(SimEvent(sim=base.model_copy(update=parsed.progress)))
    return events
