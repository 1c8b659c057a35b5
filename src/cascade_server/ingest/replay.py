"""Parsing a group's jobs, wherever the parsers are, and rebuilding the parsers that are not.

A job goes to the parse pool's worker processes (parse_pool.py) or, without a pool (tests,
scripts), to parsers kept here, on the loop. A sim whose parser is not kept where it parses
(a restart, a group rolled back, a worker that died) reads its stored chunks again from its
saved state on (`StateNeeded`, parsing.py), REPLAY_BATCH at a time, or from the start when that
state cannot be read (a damaged page: one damaged blob never stops a sim's log for good). A
worker that dies has the group parsed once more on new workers.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Protocol

from ..storage import Transaction
from .parse_pool import ParsePool, ParseWorkerDied
from .parsing import ParseJob, ParseResult, Parsers, StateNeeded

log = logging.getLogger(__name__)

# Chunks per parse when a sim's parser reads its stored log again (a few MB at a time).
REPLAY_BATCH = 16


class StoredTexts(Protocol):
    """Where the stored chunks are read again (storage.logs.LogRepository)."""

    async def stored_texts(self, tx: Transaction, sim_id: str, first: int, end: int) -> list[str]: ...


class ReplayingParser:
    def __init__(self, logs: StoredTexts, pool: ParsePool | None = None) -> None:
        self.pool = pool
        self._logs = logs
        self._parsers = Parsers()  # without a pool

    async def parse(self, tx: Transaction, jobs: list[ParseJob]) -> list[ParseResult]:
        """Parse the jobs (inside the group's write `tx`, which the stored chunks are read in)."""
        deaths = 0
        while True:
            try:
                if self.pool is None:
                    return self._parsers.parse(jobs)
                return await self.pool.parse(jobs)
            except ParseWorkerDied:
                deaths += 1
                if deaths > 1:  # new workers died too: let the simulators retry (a 503)
                    raise
                log.warning("a log parse worker died: parsing the group again on new workers")
            except StateNeeded as needed:
                # A caught-up job's state stands at its next_seq, read: this ends the next time.
                jobs = [
                    await self._caught_up(tx, job, needed.damaged.get(job.sim_id))
                    if job.sim_id in needed
                    else job
                    for job in jobs
                ]

    async def _caught_up(self, tx: Transaction, job: ParseJob, damaged: str | None) -> ParseJob:
        """The job, with the parser state that its sim's stored chunks before it lead to."""
        first, state = job.state_at, job.saved_state
        if damaged is not None:
            log.warning(
                "sim %s: its saved log parser state cannot be read (%s): reading its log again",
                job.sim_id,
                damaged,
            )
            first, state = 0, None
        for start in range(first, job.next_seq, REPLAY_BATCH):  # a long log, a batch at a time
            end = min(start + REPLAY_BATCH, job.next_seq)
            chunks = await self._logs.stored_texts(tx, job.sim_id, start, end)
            batch = ParseJob(
                job.sim_id,
                start,
                job.core_clock_mhz,
                state,
                chunks,
                False,
                job.placement,
                save_state=True,
                estimates=job.estimates,
                kernel_limit=job.kernel_limit,
            )
            [result] = await self.parse(tx, [batch])
            assert result.progress.parser_state is not None, "a batch saves its state"
            state = result.progress.parser_state
        return dataclasses.replace(job, saved_state=state, state_seq=job.next_seq)
