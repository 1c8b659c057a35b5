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
from pathlib import Path
from typing import Any

import pytest


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


@contextlib.contextmanager
def small_tmpfs(directory: Path, options: str) -> Iterator[Path]:
    """`directory` as a tmpfs mounted with `options` (`size=3m`, ...) for the duration: a
    small real disk to fill. Skips the test where it cannot be mounted (needs root)."""
    if shutil.which("mount") is None:
        pytest.skip("no mount command to make a small tmpfs")
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(directory)],
                            capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs (needs root or CAP_SYS_ADMIN): {result.stderr.strip()}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], capture_output=True, timeout=30)


def remount_tmpfs(directory: Path, options: str) -> subprocess.CompletedProcess:
    """Change a `small_tmpfs` in place (`size=64m`: space is back)."""
    return subprocess.run(["mount", "-o", f"remount,{options}", str(directory)],
                          capture_output=True, text=True, timeout=30)
