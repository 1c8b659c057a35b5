"""`cascade serve` killed with SIGKILL: its log parse workers (ingest/parse_pool.py) die with it.
An orphaned worker would keep the server's stdout and stderr open, so whoever waits for them to
close (a supervisor, a test harness) would wait for good."""

from __future__ import annotations

import signal
from pathlib import Path

from tests.e2e.test_local_server_kill import start_serve
from tests.helpers import free_port, wait_until


def children_of(pid: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


async def test_kill_9_the_server_and_its_parse_workers_die_too(tmp_path):
    server = await start_serve(tmp_path / "data", free_port(), tmp_path / "serve.log", free_port())
    try:
        workers = {
            pid
            for pid in children_of(server.pid)
            if b"rclone" not in (Path("/proc") / str(pid) / "cmdline").read_bytes()
        }
        assert len(workers) >= 1  # forked at start, before any log arrives
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=30)

        async def all_gone() -> bool:
            return not any(alive(pid) for pid in workers)

        await wait_until(all_gone, 30)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(timeout=30)
