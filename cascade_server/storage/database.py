"""The database core: the connections, the one serialized writer, and the write helper.

Every change goes through `Database.write()` (after datasette's `execute_write_fn`): it holds the writer lock, commits, then publishes the
change's events while the lock is still held, so events reach subscribers in commit order and a
snapshot taken under the lock never overlaps the events after it. Any exception rolls the change
back, so nothing half-written is left open on the shared connection for the next writer to
commit. A returned write means the data is committed (WAL survives `kill -9` of the server).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Self, TypeVar

import aiosqlite
from pydantic import BaseModel

from ..events import Broker
from .schema import migrate

T = TypeVar("T")


class Transaction:
    """One write in progress: its statements run on `conn`; its events wait for the commit."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn
        self.events: list[tuple[str, list[BaseModel]]] = []

    async def run(self, fn: Callable[[sqlite3.Connection], T], *, commit: bool = False) -> T:
        """`fn(connection)` on the writer's thread, then the commit when `commit` (the write's
        last step): several statements in one round trip to that thread, not one each. A round
        trip costs about 0.25 ms of CPU on 2 shared cores (two thread wake-ups), and a group of
        log chunks made five. (aiosqlite has no public call for this; `_execute` is the one its
        own methods use.)"""

        def call(conn: sqlite3.Connection) -> T:
            result = fn(conn)
            if commit:
                conn.commit()
            return result

        return await self.conn._execute(call, self.conn._conn)

    def publish(self, run_id: str, events: Iterable[BaseModel]) -> None:
        """Send `events` to the run's subscribers once (and only if) this write commits."""
        self.events.append((run_id, list(events)))


class Database:
    """One SQLite file: a writer every change is serialized on, a reader, and the broker the
    writer's events go to after each commit. The repositories (traces, runs, ...) share one."""

    def __init__(self, path: Path, broker: Broker | None = None) -> None:
        self.path = path
        self.broker = broker or Broker()
        # Held by every write, and by a reader that must see no commit between two steps (the
        # SSE snapshot and its subscription).
        self.lock = asyncio.Lock()
        self._w: aiosqlite.Connection | None = None  # the one writer
        self._r: aiosqlite.Connection | None = None  # reads (WAL: never blocked by the writer)

    async def open(self) -> Self:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._w = await self._connect()
            await migrate(self._w, self.path)
            self._r = await self._connect()
        except BaseException:
            await self.close()  # a connection's thread left open would keep the process alive
            raise
        return self

    async def _connect(self) -> aiosqlite.Connection:
        conn = await aiosqlite.connect(self.path)
        try:
            conn.row_factory = aiosqlite.Row
            await conn.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode: a commit survives a crash of this process; only power loss can
            # lose the last transactions.
            await conn.execute("PRAGMA synchronous=NORMAL")
            await conn.execute("PRAGMA busy_timeout=10000")
            await conn.execute("PRAGMA foreign_keys=ON")
        except BaseException:
            await conn.close()
            raise
        return conn

    async def close(self) -> None:
        for conn in (self._r, self._w):
            if conn is not None:
                await conn.close()
        self._r = self._w = None

    async def schema_version(self) -> int:
        async with self.r.execute("PRAGMA user_version") as cur:
            row = await cur.fetchone()
        return 0 if row is None else int(row[0])

    @property
    def w(self) -> aiosqlite.Connection:
        assert self._w is not None, "store is not open"
        return self._w

    @property
    def r(self) -> aiosqlite.Connection:
        assert self._r is not None, "store is not open"
        return self._r

    @asynccontextmanager
    async def write(self) -> AsyncIterator[Transaction]:
        """`async with store.write() as tx: ...; tx.publish(run_id, events)`: the block runs
        under the writer lock and is committed when it ends, then its events are published;
        an exception (or cancellation) rolls it back and publishes nothing."""
        async with self.lock:
            tx = Transaction(self.w)
            try:
                yield tx
                # (Not in one when nothing changed, or when the write's last `tx.run` committed.)
                if self.w.in_transaction:
                    await self.w.commit()
            except BaseException:
                if self.w.in_transaction:
                    await self.w.rollback()
                raise
            for run_id, events in tx.events:
                self._publish(run_id, events)

    def _publish(self, run_id: str, events: list[BaseModel]) -> None:
        if events and self.broker.has_subscribers(run_id):
            self.broker.publish(run_id, events)

    # --- meta --------------------------------------------------------------------------------

    async def get_meta(self, key: str) -> str | None:
        async with self.r.execute("SELECT value FROM meta WHERE key=?", (key,)) as cur:
            row = await cur.fetchone()
        return None if row is None else str(row[0])

    async def set_meta(self, key: str, value: str) -> None:
        async with self.write() as tx:
            await tx.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))
