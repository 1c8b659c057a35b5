"""The server's limit on each sim's stored log (CASCADE_SIM_LOG_LIMIT_MB): chunks past it keep
only what results and failures are read from (cascade_core.log_budget), before they are stored.

A Cascade worker keeps its own log within the same limit (its workers get the server's setting),
so with one the server never has to leave anything out; this is the server's own bound, for any
simulator that talks to the API, and for a worker given a larger limit than the server's.

Each sim's budget is kept in memory, counting chunks as they arrive (a worker sends them in
order, one at a time); a chunk sent again (a retry, or one refused while the sim was `pending`)
is not counted again. A server that starts, or that dropped a sim's budget to stay small, starts
the sim's count from its stored log's size, so a restart never grants a second limit.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from cascade_core import log_notes
from cascade_core.log_budget import LogBudget

SETTING = "CASCADE_SIM_LOG_LIMIT_MB"
# Budgets kept (the sims sending logs now, most recently used last); one dropped is started again
# from its sim's stored log, so only the count of this process's left-out lines is lost.
KEPT_BUDGETS = 10_000

StoredSize = Callable[[str], Awaitable[int]]


@dataclass
class SimBudget:
    budget: LogBudget
    last_seq: int = -1  # the last chunk counted


class LogLimits:
    def __init__(self, limit_mb: int, stored_size: StoredSize, kept: int = KEPT_BUDGETS) -> None:
        """`stored_size(sim_id)`: the length of the sim's stored log."""
        self.limit_mb = limit_mb
        self._stored_size = stored_size
        self._kept = kept
        self._budgets: OrderedDict[str, SimBudget] = OrderedDict()

    async def admit(self, sim_id: str, seq: int, text: str) -> str:
        """The part of chunk `seq`'s text the sim's log keeps."""
        if self.limit_mb <= 0:
            return text
        sim = await self._budget(sim_id)
        if seq <= sim.last_seq:  # sent again: kept as the log stands, and counted once
            return dataclasses.replace(sim.budget).admit(text)
        sim.last_seq = seq
        return sim.budget.admit(text)

    def words(self, sim_id: str) -> str | None:
        """What the server left out of the sim's log, for its error (None: nothing, as far as this
        server process knows; the note in the log stays either way)."""
        sim = self._budgets.get(sim_id)
        summary = sim.budget.summary() if sim is not None else None
        if summary is None:
            return None
        return f"the server's log limit: {summary} ({SETTING}={self.limit_mb})"

    async def _budget(self, sim_id: str) -> SimBudget:
        sim = self._budgets.get(sim_id)
        if sim is None:
            used = await self._stored_size(sim_id)
            sim = self._budgets.get(sim_id)  # another chunk of the sim's may have made it meanwhile
            if sim is None:
                limit = self.limit_mb * 2**20
                sim = SimBudget(LogBudget(limit, _note(self.limit_mb), used=used, over=used > limit))
                self._budgets[sim_id] = sim
                while len(self._budgets) > self._kept:
                    self._budgets.popitem(last=False)
        self._budgets.move_to_end(sim_id)
        return sim


def _note(limit_mb: int) -> str:
    return (
        f"{log_notes.PREFIX}the server's log limit of {limit_mb:,} MiB ({SETTING}) is passed: from here "
        "this sim's stored log keeps kernel launches, stats blocks, failures and Cascade's notes only"
    )
