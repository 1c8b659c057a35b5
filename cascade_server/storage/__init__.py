"""SQLite storage (aiosqlite, WAL) with one serialized writer, split by aggregate.

`core` holds the connections, the writer lock and the write helper every change goes through
(`async with store.write() as tx: ...; tx.publish(run_id, events)`); `schema` the migrations;
`codecs` how values are stored. Each aggregate adds its reads and writes on top of the one
before it: traces, runs (and their sims), outputs (kernels, files, step timelines), sim state
changes, logs. `Store` is all of them.
"""

from __future__ import annotations

from .core import Conflict, NotFound, Transaction
from .logs import LogStore
from .traces import trace_in_use


class Store(LogStore):
    """The server's database: every aggregate's reads and writes on one writer and one reader."""


__all__ = ["Conflict", "NotFound", "Store", "Transaction", "trace_in_use"]
