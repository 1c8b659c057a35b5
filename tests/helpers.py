"""The test suite's waiting-and-wiring helpers, one copy each (fixtures live in conftest.py)."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cascade_core.models import utcnow


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, for a server in another
    process (a server in this process takes a socket from `reserve_port` instead: no race)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# Sockets the OS bound for servers this process will start, by port (`reserve_port`).
RESERVED: dict[int, socket.socket] = {}


def reserve_port() -> int:
    """A port the OS chose, held by a bound socket until this process's server listens on it
    (`take_reserved`): parallel test workers cannot be handed the same port."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    RESERVED[port] = sock
    return port


def take_reserved(port: int) -> socket.socket | None:
    """The socket `reserve_port` holds for `port`, once; None when it holds none."""
    return RESERVED.pop(port, None)


class ManualClock:
    """The heartbeat monitor's clock in tests (cascade_server.clock): time moves only when the
    test calls `advance`, so a timeout is a step of the test, not a real wait on a busy machine.
    Its wall time is the real one plus what the test advanced, so times the server stamps
    itself (a heartbeat's arrival) are never ahead of it."""

    def __init__(self) -> None:
        self._t = 0.0
        self._moved = asyncio.Condition()
        self._waking_at: list[float] = []  # when each task in `sleep` wakes: the monitor between ticks

    def monotonic(self) -> float:
        return self._t

    def now(self) -> datetime:
        return utcnow() + timedelta(seconds=self._t)

    async def sleep(self, seconds: float) -> None:
        until = self._t + seconds
        async with self._moved:
            self._waking_at.append(until)
            try:
                await self._moved.wait_for(lambda: self._t >= until)
            finally:
                self._waking_at.remove(until)

    async def advance(self, seconds: float, step: float = 0.05) -> None:
        """Move time on by `seconds`, in steps; after each step, wait until every sleeper it woke
        has done its work and sleeps again (the monitor's tick is committed)."""
        await wait_until(lambda: self._waking_at, 30, 0.01)
        sleepers = len(self._waking_at)
        end = self._t + seconds
        while self._t < end:
            async with self._moved:
                self._t = min(end, self._t + step)
                self._moved.notify_all()
            await wait_until(
                lambda: len(self._waking_at) >= sleepers and all(due > self._t for due in self._waking_at),
                30,
                0.01,
            )


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


@contextlib.contextmanager
def small_tmpfs(directory: Path, options: str) -> Iterator[Path]:
    """`directory` as a tmpfs mounted with `options` (`size=3m`, ...) for the duration: a
    small real disk to fill. Skips the test where it cannot be mounted (needs root)."""
    if shutil.which("mount") is None:
        pytest.skip("no mount command to make a small tmpfs")
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(directory)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs (needs root or CAP_SYS_ADMIN): {result.stderr.strip()}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], capture_output=True, timeout=30)


def remount_tmpfs(directory: Path, options: str) -> subprocess.CompletedProcess:
    """Change a `small_tmpfs` in place (`size=64m`: space is back)."""
    return subprocess.run(
        ["mount", "-o", f"remount,{options}", str(directory)], capture_output=True, text=True, timeout=30
    )
