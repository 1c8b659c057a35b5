"""SQLite storage (aiosqlite, WAL): one database core and a repository per aggregate.

`database` holds the connections, the one serialized writer and the write helper every change
goes through (`async with db.write() as tx: ...; tx.publish(run_id, events)`: the events go out
after the commit); `schema` the migrations; `codecs` how values are stored. Each aggregate's
reads and writes are a repository on the one database: traces, runs (with their sims), outputs
(kernels, files, step timelines), sim states, logs. `Store` composes them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Self

from ..domain_errors import Conflict, Invalid, NotFound
from ..events import Broker
from .database import Database, Transaction
from .logs import LogRepository
from .outputs import OutputRepository
from .runs import RunRepository
from .sim_states import SimStateRepository
from .traces import TraceRepository, trace_in_use


class Store:
    """The server's database and its repositories, on one writer and one reader."""

    def __init__(self, path: Path, broker: Broker | None = None) -> None:
        self.db = Database(path, broker)
        self.traces = TraceRepository(self.db)
        self.runs = RunRepository(self.db, self.traces)
        self.outputs = OutputRepository(self.db, self.runs)
        self.sim_states = SimStateRepository(self.db, self.runs)
        self.logs = LogRepository(self.db)

    @property
    def path(self) -> Path:
        return self.db.path

    async def open(self) -> Self:
        await self.db.open()
        return self

    async def close(self) -> None:
        await self.db.close()


__all__ = ["Conflict", "Database", "Invalid", "NotFound", "Store", "Transaction", "trace_in_use"]
