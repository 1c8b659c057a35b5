"""Parsing a sim's next chunks into the rows and events a group's transaction stores.

Runs wherever the ingest service parses: in its worker process (parse_pool.py) or, without one,
in the caller. Each process keeps its sims' parsers between groups (rebuilding one from its
saved state per chunk would cost more than the parse). A kept parser is used only when it
stands exactly where the database says the sim's parse stands (`next_seq`): a group that was
rolled back leaves its parsers ahead of the database, and the next job finds them so and
rebuilds from the saved state, which is always the committed one.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from ..accelsim_log import LogParser
from ..shared.models import KernelStat, SimMetrics
from ..storage.codecs import pack_state, pack_stats, unpack_state
from .shard_placement import WHOLE_TRACE, ShardPlacement

# Parsers kept per process, most recently used last; a sim whose run was deleted, or that
# finished, falls off the end. A sim not kept is rebuilt from its saved state.
KEPT_PARSERS = 2_000


@dataclass(slots=True)
class ParseJob:
    """A sim's chunks from `next_seq` on, in order, with its row's saved parser state."""

    sim_id: str
    next_seq: int
    core_clock_mhz: float
    saved_state: bytes | None
    chunks: list[list[str]]
    watched: bool  # someone follows the sim's run: build what its live events need
    # A shard's kernels go to their trace positions; its warm-up kernels are stored (its own
    # results show them) but are no live `kernel` event and not counted done.
    placement: ShardPlacement = WHOLE_TRACE


class SavedStateDamaged(Exception):
    """A sim's saved parser state cannot be read (a damaged page of the database): the ingest
    service rebuilds it from the sim's stored chunks (log_ingest.py)."""

    def __init__(self, sim_id: str, why: str) -> None:
        super().__init__(sim_id, why)  # as args, so that it pickles back from a worker
        self.sim_id = sim_id
        self.why = why


@dataclass(slots=True)
class ChunkParsed:
    """What one chunk did, for the live events (only for watched sims)."""

    kernels: list[KernelStat]
    progress: dict[str, Any]


@dataclass(slots=True)
class ParseResult:
    sim_id: str
    kernel_rows: list[tuple[Any, ...]]  # storage.logs.KERNEL_COLUMNS
    progress_row: tuple[Any, ...]  # storage.logs.PROGRESS_COLUMNS, then the sim's id
    chunks: list[ChunkParsed] = field(default_factory=list)


def progress_of(parser: LogParser, placement: ShardPlacement = WHOLE_TRACE) -> dict[str, Any]:
    """The parser's view of a sim's progress, as SimSummary fields."""
    return {
        "kernels_done": placement.owned_done(parser.kernels_done),
        "current_kernel": parser.current_kernel,
        "latest": SimMetrics(**parser.latest),
        "log_tail": list(parser.log_tail),
    }


class Parsers:
    def __init__(self, kept: int = KEPT_PARSERS) -> None:
        self._kept = kept
        self._parsers: OrderedDict[str, tuple[int, LogParser]] = OrderedDict()

    def parse(self, jobs: list[ParseJob]) -> list[ParseResult]:
        return [self._parse(job) for job in jobs]

    def _parse(self, job: ParseJob) -> ParseResult:
        kept = self._parsers.pop(job.sim_id, None)
        if kept is not None and kept[0] == job.next_seq:
            parser = kept[1]
        else:
            try:
                parser = LogParser(job.core_clock_mhz, state=unpack_state(job.saved_state))
            except Exception as exc:  # whatever a damaged blob makes decompress or unpickle raise
                raise SavedStateDamaged(job.sim_id, f"{type(exc).__name__}: {exc}") from None
        sim_id = job.sim_id
        rows: list[tuple[Any, ...]] = []
        chunks: list[ChunkParsed] = []
        placement = job.placement
        for lines in job.chunks:
            kernels = parser.feed(lines)
            own = []
            for k in kernels:
                if not placement.is_warmup(k.kernel_index):
                    own.append(k)
                k.kernel_index = placement.placed_index(k.kernel_index)
                rows.append(
                    (
                        sim_id,
                        k.kernel_index,
                        k.kernel_name,
                        k.kernel_launch_uid,
                        k.gpu_sim_cycle,
                        k.gpu_sim_insn,
                        k.gpu_ipc,
                        k.sim_time_ns,
                        pack_stats(k.stats),
                    )
                )
            if job.watched:
                chunks.append(ChunkParsed([k.to_stat(sim_id) for k in own], progress_of(parser, placement)))
        next_seq = job.next_seq + len(job.chunks)
        self._parsers[sim_id] = (next_seq, parser)
        while len(self._parsers) > self._kept:
            self._parsers.popitem(last=False)
        progress = progress_of(parser, placement)
        progress_row = (
            next_seq,
            pack_state(parser.state()),
            progress["kernels_done"],
            progress["current_kernel"],
            progress["latest"].model_dump_json(),
            json.dumps(progress["log_tail"]),
            sim_id,
        )
        return ParseResult(sim_id, rows, progress_row, chunks)


# The worker process's parsers (parse_pool.py runs `parse_in_this_process` there).
_parsers = Parsers()


def parse_in_this_process(jobs: list[ParseJob]) -> list[ParseResult]:
    return _parsers.parse(jobs)
