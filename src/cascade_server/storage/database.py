"""The database core: the connections, the one serialized writer, and the write helper.

Every change goes through `Database.write()` (after datasette's `execute_write_fn`): it holds the writer lock, commits, then publishes the
change's events while the lock is still held, so events reach subscribers in commit order and a
snapshot taken under the lock never overlaps the events after it. Any exception rolls the change
back, so nothing half-written is left open on the shared connection for the next writer to
commit. A returned write means the data is committed (WAL survives `kill -9` of the server).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import shutil
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Self, TypeVar

import aiosqlite
from pydantic import BaseModel

from ..events import Broker
from ..faults import FULL_DISK_BYTES, is_disk_full
from .schema import DatabaseUnusable, migrate, schema_problem

log = logging.getLogger(__name__)

# How long the read-only connections outlive the swap to writable ones, for the reads on them.
RETIRED_CLOSE_S = 60.0

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
        # Opened on a full disk: both connections read the file as it is, and every write fails
        # as a full disk does (507) until space is back, when the next write opens it for real.
        self.read_only = False
        # Writes a full disk refused so far: heartbeats among them were answered 507 and not
        # stored, so the heartbeat monitor does not count the silence the database shows then.
        self.refused_writes = 0
        self._retired: list[aiosqlite.Connection] = []  # the read-only pair, once swapped out
        self._retiring: asyncio.Task[None] | None = None  # closes them RETIRED_CLOSE_S later

    async def open(self) -> Self:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            await self._open(read_only=False)
        except sqlite3.Error as exc:
            if not self._full_with_nothing_unsaved():
                raise
            # SQLite cannot size its shared-memory file on a full disk, so a clean database
            # (its write-ahead log empty: everything is in the main file) is read as it is.
            log.warning("opening %s read-only: the disk is full (%s)", self.path, exc)
            try:
                await self._open(read_only=True)
            except DatabaseUnusable as unusable:
                raise unusable from None  # one line: the full disk is in its message
        return self

    async def _open(self, *, read_only: bool) -> None:
        self._w, self._r = await self._connections(read_only)
        self.read_only = read_only

    async def _connections(self, read_only: bool) -> tuple[aiosqlite.Connection, aiosqlite.Connection]:
        """The writer (the schema brought up to date, or checked so when read-only), then the
        reader; on failure none is left open (its thread would keep the process alive)."""
        opened: list[aiosqlite.Connection] = []
        try:
            opened.append(await self._connect(read_only))
            if read_only:
                await self._check_schema_current(opened[0])
            else:
                await migrate(opened[0], self.path)
            opened.append(await self._connect(read_only))
        except BaseException:
            for conn in opened:
                await conn.close()
            raise
        return opened[0], opened[1]

    def _full_with_nothing_unsaved(self) -> bool:
        """The disk is full and the write-ahead log holds no commit the main file lacks (absent
        or empty): only then is the main file alone the whole database."""
        if self._disk_has_room():
            return False
        try:
            return self.path.with_name(self.path.name + "-wal").stat().st_size == 0
        except FileNotFoundError:
            return True
        except OSError:
            return False

    async def _check_schema_current(self, conn: aiosqlite.Connection) -> None:
        async with conn.execute("PRAGMA user_version") as cur:
            row = await cur.fetchone()
        if problem := schema_problem(self.path, 0 if row is None else row[0], can_upgrade=False):
            raise DatabaseUnusable(problem)

    async def _connect(self, read_only: bool) -> aiosqlite.Connection:
        if read_only:
            # `immutable`: no locks and no shared memory, which a full disk cannot give; safe
            # because this server is the database's only user and writes nothing meanwhile.
            conn = await aiosqlite.connect(f"{self.path.resolve().as_uri()}?immutable=1", uri=True)
        else:
            conn = await aiosqlite.connect(self.path)
        try:
            conn.row_factory = aiosqlite.Row
            if not read_only:
                await conn.execute("PRAGMA journal_mode=WAL")
                # NORMAL in WAL mode: a commit survives a crash of this process; only power
                # loss can lose the last transactions.
                await conn.execute("PRAGMA synchronous=NORMAL")
                await conn.execute("PRAGMA busy_timeout=10000")
            await conn.execute("PRAGMA foreign_keys=ON")
        except BaseException:
            await conn.close()
            raise
        return conn

    def _disk_has_room(self) -> bool:
        try:
            return shutil.disk_usage(self.path.parent).free >= FULL_DISK_BYTES
        except OSError:
            return False

    async def _writable(self) -> None:
        """Under the writer lock, on a database opened read-only on a full disk: open it for
        writing once space is back, else fail the write as a full disk does."""
        if self._disk_has_room():
            try:
                writer, reader = await self._connections(read_only=False)
            except sqlite3.Error as exc:
                log.warning("%s is still not writable: %s", self.path, exc)
            else:
                # Swapped, and the read-only pair closed only later: reads already running on
                # it (a log streaming out) finish there.
                self._retired += [conn for conn in (self._w, self._r) if conn is not None]
                self._w, self._r, self.read_only = writer, reader, False
                self._retiring = asyncio.create_task(self._close_retired())
                log.info("%s is writable again: the disk has space", self.path)
                return
        raise OSError(errno.ENOSPC, "the disk is full (the database is open read-only)")

    async def close(self) -> None:
        if self._retiring is not None:
            self._retiring.cancel()
        for conn in (self._r, self._w, *self._retired):
            if conn is not None:
                await conn.close()
        self._r = self._w = None
        self._retired = []

    async def _close_retired(self) -> None:
        await asyncio.sleep(RETIRED_CLOSE_S)
        for conn in list(self._retired):  # each left listed until closed: close() ends the rest
            await conn.close()
            self._retired.remove(conn)

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

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """`fn(connection)` on the reader's thread: a read of many rows that builds what it
        returns there, a row at a time (each step lets the event loop run), not on the loop."""
        return await self.r._execute(fn, self.r._conn)

    @asynccontextmanager
    async def write(self) -> AsyncIterator[Transaction]:
        """`async with store.write() as tx: ...; tx.publish(run_id, events)`: the block runs
        under the writer lock and is committed when it ends, then its events are published;
        an exception (or cancellation) rolls it back and publishes nothing."""
        async with self.lock:
            try:
                if self.read_only:
                    await self._writable()
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
            except Exception as exc:
                if is_disk_full(exc):
                    self.refused_writes += 1
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
