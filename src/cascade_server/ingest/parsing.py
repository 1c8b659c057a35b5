"""Parsing a sim's next chunks into the rows and events a group's transaction stores.

Runs wherever the ingest service parses: in its worker process (parse_pool.py) or, without one,
in the caller. Each process keeps its sims' parsers between groups (rebuilding one from its
saved state per chunk would cost more than the parse). A kept parser is used only when it
stands exactly where the database says the sim's parse stands (`next_seq`): a group that was
rolled back leaves its parsers ahead of the database, and the next job finds them so and
rebuilds from the saved state, which is always a committed one.

The parser's state is saved every STATE_EVERY chunks, not with each: a real log is nearly all
stats block, so the state a chunk ends in holds an open block of hundreds of KB, and packing it
with every chunk cost a fifth of the parse workers' time (benchmarks/bench_ingest.py). A saved
state stands before chunk `state_seq`; a parser rebuilt from it first reads the stored chunks
from there to `next_seq` again (`StateNeeded`, replay.py), at most STATE_EVERY - 1 of them.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from cascade_core.log_notes import MAX_POSITIONS
from cascade_core.models import KernelPowerAt, KernelStat, SimMetrics

from ..storage.codecs import unpack_state
from ..storage.logs import (
    ChunkRow,
    KernelRow,
    PowerRow,
    ProgressRow,
    chunk_row,
    kernel_row,
    power_rows,
    progress_row,
)
from .parser.accelsim_log import LogParser
from .parser.kernel import estimated
from .shard_placement import WHOLE_TRACE, ShardPlacement

# Parsers kept per process, most recently used last; a sim whose run was deleted, or that
# finished, falls off the end. A sim not kept is rebuilt from its saved state.
KEPT_PARSERS = 2_000

# A sim's parser state is saved once this many chunks have been parsed since it last was.
STATE_EVERY = 16


@dataclass(slots=True)
class ParseJob:
    """A sim's chunks from `next_seq` on, in order, each as its text (`chunk_text`: the form a
    chunk keeps from the request on, which the parser takes as it is), with its row's saved
    parser state, which stands before chunk `state_seq` (at most `next_seq`)."""

    sim_id: str
    next_seq: int
    core_clock_mhz: float
    saved_state: bytes | None
    chunks: list[str]
    watched: bool  # someone follows the sim's run: build what its live events need
    # A shard's kernels go to their trace positions; its warm-up kernels are stored (its own
    # results show them) but are no live `kernel` event and not counted done.
    placement: ShardPlacement = WHOLE_TRACE
    state_seq: int | None = None  # None: next_seq
    save_state: bool = False  # save the state after these chunks, however few they are
    # Make the chunks' rows for storage too (ParseResult.stored: compressing them is the workers'
    # work, beside the parse, off the event loop). Not for chunks read back from storage.
    pack: bool = False
    # A sampled sim: representative -> the kernels that take its numbers, with their scale.
    estimates: dict[int, tuple[tuple[int, float], ...]] | None = None
    # The trace's kernels: the positions the worker's notes may name (None: unknown, no bound).
    kernel_limit: int | None = None
    power: bool = False  # the sim simulates power: its log's power notes are stored

    def takes_power(self, index: int) -> bool:
        """Whether a power note for the kernel at trace position `index` is one this sim's worker
        writes: a power sim's, for a kernel of its range, not one estimated from another."""
        if not self.power or index < self.placement.first or not self.placement.owns(index):
            return False
        return not any(index == p for estimated in (self.estimates or {}).values() for p, _ in estimated)

    @property
    def state_at(self) -> int:
        return self.next_seq if self.state_seq is None else self.state_seq


class StateNeeded(Exception):
    """Some jobs' sims have no parser here that stands at their `next_seq`, and their saved
    state cannot give one as it is: it stands before `next_seq` (`replay`: the stored chunks
    from `state_seq` on must be read first), or it cannot be read (`damaged`, sim id to why: a
    damaged page of the database; the sim's whole stored log must be read again). The ingest
    service does either and sends the jobs again (replay.py)."""

    def __init__(self, replay: list[str], damaged: dict[str, str]) -> None:
        super().__init__(replay, damaged)  # as args, so that it pickles back from a worker
        self.replay = replay
        self.damaged = damaged

    def __contains__(self, sim_id: str) -> bool:
        return sim_id in self.damaged or sim_id in self.replay


@dataclass(slots=True)
class ChunkParsed:
    """What one chunk did, for the live events (only for watched sims)."""

    kernels: list[KernelStat]
    progress: dict[str, Any]
    power: list[KernelPowerAt] = field(default_factory=list)  # kernels' power that came


@dataclass(slots=True)
class ParseResult:
    """What a job's chunks come to, as storage's rows (storage/logs.py)."""

    sim_id: str
    kernels: list[KernelRow]
    progress: ProgressRow  # with the parser state after the chunks, when it is to be saved
    chunks: list[ChunkParsed] = field(default_factory=list)
    stored: list[ChunkRow] = field(default_factory=list)  # each chunk's row, when job.pack
    power: list[PowerRow] = field(default_factory=list)  # a power sim's kernels' power


def progress_of(parser: LogParser, placement: ShardPlacement = WHOLE_TRACE) -> dict[str, Any]:
    """The parser's view of a sim's progress, as SimSummary fields."""
    return {
        # the sim's own kernels done: simulated (a shard's first warm-up kernels and a restart's
        # not counted) or failed in the simulator
        "kernels_done": placement.within_range(
            placement.owned_done(parser.kernels_done - parser.kernels_dropped - parser.kernels_placed)
            + parser.kernels_noted
        ),
        "kernels_failed": parser.kernels_failed,
        "current_kernel": parser.current_kernel,
        "latest": SimMetrics(**parser.latest),
        "log_tail": list(parser.log_tail),
    }


class Parsers:
    def __init__(self, kept: int = KEPT_PARSERS) -> None:
        self._kept = kept
        self._parsers: OrderedDict[str, tuple[int, LogParser]] = OrderedDict()

    def parse(self, jobs: list[ParseJob]) -> list[ParseResult]:
        # Every job's parser first, so that one StateNeeded names every sim that needs it, and
        # no kept parser has moved on when it is raised.
        parsers = {job.sim_id: self._parser(job) for job in jobs}
        replay = [sim_id for sim_id, parser in parsers.items() if parser is None]
        damaged = {sim_id: why for sim_id, why in parsers.items() if isinstance(why, str)}
        if replay or damaged:
            raise StateNeeded(replay, damaged)
        return [self._parse(job, parsers[job.sim_id]) for job in jobs]  # type: ignore[arg-type]

    def _parser(self, job: ParseJob) -> LogParser | str | None:
        """The parser that stands at the job's next_seq; None when there is none yet (its saved
        state stands before), or why its saved state cannot be read."""
        kept = self._parsers.get(job.sim_id)
        if kept is not None and kept[0] == job.next_seq:
            return kept[1]
        if job.state_at != job.next_seq:
            return None
        try:
            return LogParser(
                job.core_clock_mhz,
                state=unpack_state(job.saved_state),
                kernel_limit=job.kernel_limit or MAX_POSITIONS,
            )
        except Exception as exc:  # whatever a damaged blob makes decompress or unpickle raise
            return f"{type(exc).__name__}: {exc}"

    def _parse(self, job: ParseJob, parser: LogParser) -> ParseResult:
        sim_id = job.sim_id
        # Kept again only once it has read every chunk: a feed that raised leaves it nowhere.
        self._parsers.pop(sim_id, None)
        rows: list[KernelRow] = []
        power: list[PowerRow] = []
        chunks: list[ChunkParsed] = []
        placement = job.placement
        for text in job.chunks:
            kernels = parser.feed_text(text)
            own = []
            for k in kernels:
                # after a restart, or a failed kernel: at its trace position already
                mine = k.placed or not placement.is_warmup(k.kernel_index)
                if not k.placed:
                    k.kernel_index = placement.placed_index(k.kernel_index)
                if mine and placement.owns(k.kernel_index):
                    own.append(k)
                rows.append(kernel_row(sim_id, k))
                for position, scale in (job.estimates or {}).get(k.kernel_index, ()):
                    guess = estimated(k, position, scale)  # sampling: every kernel gets a row
                    rows.append(kernel_row(sim_id, guess))
                    own.append(guess)
            # at trace positions already (the worker's notes); an estimated kernel takes its
            # representative's
            notes = [note for note in parser.take_power() if job.takes_power(note.kernel_index)]
            came = power_rows(sim_id, notes, job.estimates or {})
            power += came
            if job.watched:
                chunks.append(
                    ChunkParsed(
                        [k.to_stat(sim_id) for k in own],
                        progress_of(parser, placement),
                        [row.event() for row in came],
                    )
                )
        next_seq = job.next_seq + len(job.chunks)
        self._parsers[sim_id] = (next_seq, parser)
        while len(self._parsers) > self._kept:
            self._parsers.popitem(last=False)
        progress = progress_of(parser, placement)
        save_state = job.save_state or next_seq - job.state_at >= STATE_EVERY
        stored = (
            [chunk_row(sim_id, seq, text) for seq, text in enumerate(job.chunks, job.next_seq)]
            if job.pack
            else []
        )
        row = progress_row(
            sim_id,
            next_seq,
            progress["kernels_done"],
            progress["current_kernel"],
            progress["latest"],
            progress["log_tail"],
            parser.state() if save_state else None,
            progress["kernels_failed"],
        )
        return ParseResult(sim_id, rows, row, chunks, stored, power)


# The worker process's parsers (parse_pool.py runs `parse_in_this_process` there).
_parsers = Parsers()


def parse_in_this_process(jobs: list[ParseJob]) -> list[ParseResult]:
    return _parsers.parse(jobs)
