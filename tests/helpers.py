"""The test suite's two waiting-and-wiring helpers, one copy each (fixtures live in conftest.py)."""

from __future__ import annotations

import asyncio
import inspect
import socket
import time
from collections.abc import Callable
from typing import Any


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_until(check: Callable[[], Any], timeout: float = 90.0, interval: float = 0.05) -> Any:
    """Call `check` (plain or async) until it returns something truthy and return that; fail
    with its last result after `timeout` seconds. The condition is what the test waits for: a
    generous timeout only matters when the test is failing anyway."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s; last: {result!r}")
        await asyncio.sleep(interval)
