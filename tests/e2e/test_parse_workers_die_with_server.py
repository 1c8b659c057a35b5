"""`cascade serve` killed with SIGKILL: its log parse workers (ingest/parse_pool.py) die with it.
An orphaned worker would keep the server's stdout and stderr open, so whoever waits for them to
close (a supervisor, a test harness) would wait for good."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import LOCAL_LAUNCHER
from tests.helpers import wait_until


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


async def test_kill_9_the_server_and_its_parse_workers_die_too(start_serve):
    server = await start_serve(**LOCAL_LAUNCHER)
    workers = {
        pid
        for pid in children_of(server.pid)
        if b"rclone" not in (Path("/proc") / str(pid) / "cmdline").read_bytes()
    }
    assert len(workers) >= 1  # forked at start, before any log arrives
    await server.kill()

    async def all_gone() -> bool:
        return not any(alive(pid) for pid in workers)

    await wait_until(all_gone, 30)
