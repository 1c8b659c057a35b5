"""What the benchmarks share: a process's CPU and memory read from /proc, a free loopback port,
and waiting for a server to show something."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu_seconds(pid: int) -> dict[int, float]:
    """cpu_seconds of each of the process's threads, by thread id (the main thread's is `pid`)."""
    times = {}
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        times[int(stat.parent.name)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return times


def tree_cpu_seconds(pid: int) -> float:
    """cpu_seconds of the process and of every live descendant (the server's parse worker)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        try:
            total += cpu_seconds(current)
        except OSError:
            continue
        todo.extend(children.get(current, []))
    return total


def memory_mib(pid: int) -> tuple[float, float]:
    """(current RSS, peak RSS) in MiB."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            key, value = line.split(":", 1)
            values[key] = int(value.split()[0]) / 1024
    return values.get("VmRSS", float("nan")), values.get("VmHWM", float("nan"))


def wait_for(check, timeout: float, what: str):
    """Poll `check()` until it returns something truthy (an HTTP error counts as not yet); exit
    the benchmark saying `what` did not happen within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if value := check():
                return value
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    sys.exit(f"bench: {what} not within {timeout} s")


def start_serve(env: dict[str, str], data: Path, log: Path) -> tuple[subprocess.Popen, int]:
    """`cascade serve` on `data` in its own process (output to `log`), on a free port; and
    the port."""
    port = free_port()
    serve_env = {
        **env,
        "CASCADE_DATA_DIR": str(data),
        "CASCADE_PORT": str(port),
        "CASCADE_S3_PORT": str(free_port()),
        "CASCADE_SCAN_INTERVAL_S": "0.5",
    }
    with open(log, "wb") as out:  # the child keeps its own copy of the file
        serve = subprocess.Popen(
            [sys.executable, "-m", "cascade_tui.cli", "serve"],
            env=serve_env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return serve, port
