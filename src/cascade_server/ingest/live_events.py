"""The live events a sim's parsed chunks make, published after the group's commit (only for
runs someone watches): per chunk, its lines, the kernels it completed, the sim's progress after
it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from cascade_core.models import KernelEvent, LogEvent, SimEvent

from ..storage.codecs import chunk_lines, sim_from_row
from .parsing import ParseJob, ParseResult


def chunk_events(row: Any, job: ParseJob, result: ParseResult) -> list[BaseModel]:
    """The events of the job's chunks; `row`: the sim's row as it was before them."""
    base = sim_from_row(row)
    events: list[BaseModel] = []
    for text, parsed in zip(job.chunks, result.chunks):
        events.append(LogEvent(sim_id=job.sim_id, lines=chunk_lines(text)))
        events.extend(KernelEvent(stat=stat) for stat in parsed.kernels)
        events.append(SimEvent(sim=base.model_copy(update=parsed.progress)))
    return events
