"""The heartbeat monitor: marks silent sims `lost`, then `failed` (Store.expire_heartbeats).

It only counts silence the server was there to hear. A server that was not running (stopped
with SIGSTOP, its host suspended, its event loop stalled, or simply not started yet) could not
receive heartbeats, and the workers were retrying all along: after such a gap every sim gets a
full timeout from the moment the server runs again (`AwakeClock`), instead of all going `lost`
at once. The same holds after a full disk: the heartbeats it answered 507 were not stored, so
once writes work again every sim gets a full timeout from then.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from datetime import datetime

from aiohttp import web

from .appkeys import CLOCK_KEY, SETTINGS_KEY, STORE_KEY
from .faults import is_disk_full

log = logging.getLogger(__name__)


class AwakeClock:
    """Since when the server has been running without a gap, from the monitor's ticks. Pure:
    the caller passes the monotonic and wall-clock times of each tick."""

    def __init__(self, interval_s: float, monotonic: float, wall: datetime) -> None:
        self.interval_s = interval_s
        # A tick this much later than due means the server was not running in between (slower
        # ticks under load are normal: the monitor waits for the writer like everyone else).
        self.gap_s = max(interval_s, 1.0)
        self.awake_since = wall
        self._last = monotonic
        self._refused_at: datetime | None = None

    def tick(self, monotonic: float, wall: datetime) -> datetime:
        late = monotonic - self._last - self.interval_s
        self._last = monotonic
        if late > self.gap_s:
            log.warning(
                "the server did not run for %.1f s; every sim gets a full heartbeat timeout again",
                late + self.interval_s,
            )
            self.awake_since = wall
        return self.awake_since

    def stored_again(self, wall: datetime) -> datetime:
        """A full disk refused writes since the last tick: heartbeats among them (answered 507)
        were not stored, so the silence the database shows until now is not the sims'."""
        if self.awake_since != self._refused_at:  # said once per full disk, not every tick
            log.warning(
                "the disk refused writes, heartbeats among them; every sim gets a full heartbeat "
                "timeout once writes are stored again"
            )
        self.awake_since = self._refused_at = wall
        return wall


async def heartbeat_monitor_ctx(app: web.Application) -> AsyncIterator[None]:
    settings, store, clock = app[SETTINGS_KEY], app[STORE_KEY], app[CLOCK_KEY]
    awake = AwakeClock(settings.monitor_interval_s, clock.monotonic(), clock.now())

    async def watch() -> None:
        refused = store.db.refused_writes
        while True:
            await clock.sleep(settings.monitor_interval_s)
            now = clock.now()
            awake_since = awake.tick(clock.monotonic(), now)
            if store.db.refused_writes != refused:  # a full disk refused writes since the last tick
                refused = store.db.refused_writes
                awake_since = awake.stored_again(now)
            try:
                await store.sim_states.expire_heartbeats(
                    settings.heartbeat_timeout_s, now=now, awake_since=awake_since
                )
            except Exception as exc:
                if is_disk_full(exc):  # it tries again next tick; no traceback every tick
                    log.warning("heartbeat monitor: disk full (%s)", exc)
                else:
                    log.exception("heartbeat monitor")

    task = asyncio.create_task(watch())
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
