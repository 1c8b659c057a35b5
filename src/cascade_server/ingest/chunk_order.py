"""Which of a group's chunks are taken, and which of a sim's chunks are next to parse.

A chunk is refused when its sim does not exist (404), or when it is MAX_AHEAD chunks or more past
the chunk the sim's log waits for (`next_seq`, 409: see MAX_AHEAD). A sim still `pending` takes
its chunks as any other (the spec's 204): its simulator can start before its launcher has
recorded it (a Slurm job that runs before `sbatch` answers). A repeated seq is ignored (the first
chunk per seq wins). A chunk past a gap is parked (stored, not parsed) until the gap fills.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any

from cascade_core.models import INT64_MAX

from ..domain_errors import Conflict, NotFound
from .group_writer import PendingChunk

# How far past the chunk a sim's log waits for (`next_seq`) a chunk may be, to be parked until
# the gap fills: parked chunks are looked up with every append of the sim, so they must be few
# (20,000 made appends 75 times slower), and each is held until the gap before it fills or closes.
# A worker sends its chunks in order, one at a time, so only a client that skips 1,000 chunks
# meets it: refused (409, nothing stored), not taken and dropped, so it can send them again.
MAX_AHEAD = 1_000

# The stored text of a parked chunk: (sim_id, seq) -> its text.
ReadParked = Callable[[str, int], Awaitable[str]]


def admit(
    group: list[PendingChunk], rows: Mapping[str, Any], parked: Collection[tuple[str, int]]
) -> dict[str, dict[int, PendingChunk]]:
    """The group's chunks to store, by sim and seq, in the order they came. Each refused chunk is
    answered here (its future's exception); a repeat is left to be answered with the group.
    `rows`: the sims' rows by id (`next_seq`); `parked`: (sim_id, seq) of the chunks
    stored earlier that wait for a gap to fill."""
    fresh: dict[str, dict[int, PendingChunk]] = {}
    for pending in group:
        row = rows.get(pending.sim_id)
        if row is None:
            pending.done.set_exception(NotFound(f"sim {pending.sim_id} not found"))
            continue
        # (A seq past SQLite's integers never comes over HTTP, whose model refuses it; from a
        # direct caller it fails the write as any value SQLite cannot store does.)
        if MAX_AHEAD <= pending.seq - row["next_seq"] and pending.seq <= INT64_MAX:
            pending.done.set_exception(
                Conflict(
                    f"seq {pending.seq} is {pending.seq - row['next_seq']} chunks past seq {row['next_seq']}, "
                    f"which this sim's log waits for; at most {MAX_AHEAD - 1} may wait: "
                    f"send seq {row['next_seq']} first"
                )
            )
            continue
        chunks = fresh.setdefault(pending.sim_id, {})
        if pending.seq < row["next_seq"] or (pending.sim_id, pending.seq) in parked or pending.seq in chunks:
            continue  # a retry: the first chunk per seq wins
        chunks[pending.seq] = pending
    return fresh


async def next_in_order(
    sim_id: str,
    next_seq: int,
    chunks: Mapping[int, PendingChunk],
    parked: Collection[tuple[str, int]],
    read_parked: ReadParked,
) -> tuple[list[str], bool]:
    """The texts of the sim's chunks that are next from `next_seq` on, fresh (`chunks`) or
    parked earlier, in order; and whether any chunk, fresh or parked, still waits past a gap."""
    texts: list[str] = []
    seq = next_seq
    while True:
        if seq in chunks:
            texts.append(chunks[seq].text)
        elif (sim_id, seq) in parked:
            texts.append(await read_parked(sim_id, seq))
        else:
            break
        seq += 1
    waiting = any(later > seq for later in chunks) or any(
        s_id == sim_id and later > seq for s_id, later in parked
    )
    return texts, waiting
