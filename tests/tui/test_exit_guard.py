"""The exit guard in a real process whose main thread is stuck for good (as Textual's is when its
output queue stops draining on a dead terminal): SIGHUP, SIGTERM or the terminal hanging up must
still kill the protected server process group and end the process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cascade_tui.exit_guard import kill_process_groups, terminal_gone

from .helpers import REPO, poll_until

pytestmark = pytest.mark.timeout(60)

STUCK_UI = Path(__file__).with_name("data") / "stuck_ui.py"


def gone(pid: int) -> bool:
    """True once `pid` no longer exists (or is a zombie nobody will run again)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1].startswith("Z")
    except FileNotFoundError:
        return True


def wait_gone(pids: list[int], timeout: float = 30.0) -> None:
    poll_until(
        lambda: all(gone(pid) for pid in pids),
        lambda: f"these to end, still running: {[p for p in pids if not gone(p)]}",
        timeout,
        interval=0.05,
    )


@contextmanager
def stuck_ui(mode: str, **kw) -> Iterator[tuple[subprocess.Popen, list[int]]]:
    """The stuck UI and the pids of its server and the server's child; killed at the end, its
    server's group too, whatever the test saw."""
    proc = subprocess.Popen(
        [sys.executable, str(STUCK_UI), mode], cwd=REPO, stdout=subprocess.PIPE, text=True, **kw
    )
    assert proc.stdout is not None
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert len(pids) == 2, "the stuck UI did not start its server"
    try:
        yield proc, pids
    finally:
        proc.kill()
        kill_process_groups(pids[:1], 0)


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM])
def test_a_stop_signal_to_a_stuck_ui_kills_its_server_group_and_exits(signum):
    with stuck_ui("plain") as (proc, pids):
        proc.send_signal(signum)
        assert proc.wait(30) == 128 + signum
        wait_gone(pids)


def test_a_hung_up_terminal_without_any_signal_ends_a_stuck_ui():
    master, slave = os.openpty()
    with stuck_ui("tty", stdin=slave, start_new_session=True) as (proc, pids):
        os.close(slave)
        assert not terminal_gone(master)
        os.close(master)  # the terminal emulator / sshd goes away; nobody sends a signal
        assert proc.wait(30) == 128 + signal.SIGHUP
        wait_gone(pids)


def test_terminal_gone_is_false_for_a_live_terminal_and_for_no_terminal():
    master, slave = os.openpty()
    try:
        assert not terminal_gone(slave)
        assert not terminal_gone(None)
    finally:
        os.close(master)
        os.close(slave)
