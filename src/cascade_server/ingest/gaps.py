"""Gaps in a sim's chunks that never fill: a gap still open GAP_WAIT_S after it opened, or at
the sim's final heartbeat, is closed: the chunks that never arrived are stored empty, the sim
names each run of them (`missing_log_chunks`), and what came after them is parsed
(`LogIngest.close_gaps`, log_ingest.py). The log stays exactly what the simulator sent: no line
of the server's stands in it for the missing ones.

The timers live in the server's process: a restarted server finds the open gaps in the
database and gives each its wait again (`LogIngest.watch_stored_gaps`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

# How long a gap in a sim's chunks may stay open before what came after it is parsed without it.
# A worker retries a chunk until the server has it, so a gap this old is lines that are lost.
GAP_WAIT_S = 30.0

# Closes the sim's gaps: (sim_id, the chunk its log waited for when the timer was set, or None).
CloseGaps = Callable[[str, int | None], Awaitable[None]]


class GapTimers:
    """A timer per sim whose log waits past a gap: when it fires, `close_gaps` runs."""

    def __init__(self, close_gaps: CloseGaps) -> None:
        self._close_gaps = close_gaps
        # sim id -> (the chunk its log waits for, the timer that closes that gap)
        self._timers: dict[str, tuple[int | None, asyncio.TimerHandle]] = {}
        self._closing: set[asyncio.Task[None]] = set()

    def close(self) -> None:
        """Stop the timers and the closes they started (the app is ending; a restarted server
        finds the gaps again)."""
        for _, timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        for task in self._closing:
            task.cancel()

    def watch(self, sim_id: str, waiting_for: int | None) -> None:
        """Give the gap at chunk `waiting_for` GAP_WAIT_S to fill; a timer for an earlier gap,
        which has filled, goes (a gap's time starts when it opens, not when the first did).
        None: close the sim's gaps then, whatever chunk it waits for (a close that failed)."""
        watched = self._timers.get(sim_id)
        if watched is not None and watched[0] == waiting_for:
            return
        self.unwatch(sim_id)
        timer = asyncio.get_running_loop().call_later(GAP_WAIT_S, self._timed_out, sim_id, waiting_for)
        self._timers[sim_id] = (waiting_for, timer)

    def unwatch(self, sim_id: str) -> None:
        if (watched := self._timers.pop(sim_id, None)) is not None:
            watched[1].cancel()

    def watched(self, sim_id: str) -> int | None:
        """The chunk whose gap the sim's timer waits for, if one does."""
        watched = self._timers.get(sim_id)
        return None if watched is None else watched[0]

    def _timed_out(self, sim_id: str, waiting_for: int | None) -> None:
        self._timers.pop(sim_id, None)
        task = asyncio.ensure_future(self._close_gaps(sim_id, waiting_for))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)


def missing_runs(next_seq: int, parked: Sequence[int]) -> list[tuple[int, int]]:
    """The runs (first, last) of chunks missing from `next_seq` to the last of `parked` (the
    sim's parked chunks, in order)."""
    runs: list[tuple[int, int]] = []
    present = set(parked)
    seq = next_seq
    while parked and seq <= parked[-1]:
        if seq in present:
            seq += 1
            continue
        first = seq
        while seq not in present:
            seq += 1
        runs.append((first, seq - 1))
    return runs
