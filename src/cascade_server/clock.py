"""The server's sense of time, injected so that tests drive the heartbeat monitor by advancing a
clock instead of sleeping through real timeouts (which a loaded machine stretches)."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Protocol

from cascade_core.models import utcnow


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def now(self) -> datetime: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """Real time: what the server runs on."""

    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> datetime:
        return utcnow()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
