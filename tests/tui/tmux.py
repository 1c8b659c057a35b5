"""The tmux harness of the tmux tests: a private tmux server running one command in a terminal
of a given size, its pane read as an operator sees it; the environment `cascade` gets there, and
the ports it opens."""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.conftest import free_port

from .helpers import REPO, poll_until

TMUX = [  # every tmux test's marks (its module's `pytestmark`)
    pytest.mark.tmux,
    pytest.mark.skipif(
        shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux; .ci/run does it)"
    ),
    pytest.mark.timeout(240),
]


class Tmux:
    """One private tmux server (its own socket) with one session running `command`."""

    def __init__(self, command: str, env: dict[str, str], size: tuple[int, int] = (100, 30)) -> None:
        self.socket = f"cascade-test-{uuid.uuid4().hex[:8]}"
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        self.run(
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            str(size[0]),
            "-y",
            str(size[1]),
            f"cd {shlex.quote(str(REPO))} && env {exports} {command}; echo EXITED $?; sleep 30",
        )

    def run(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout

    def pane(self) -> str:
        return self.run("capture-pane", "-t", "t", "-p")

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "t", *keys)

    def wait_for(self, text: str, timeout: float = 60.0) -> str:
        poll_until(
            lambda: text in self.pane(),
            lambda: f"{text!r} on the terminal:\n{self.pane()}",
            timeout,
            interval=0.2,
        )
        return self.pane()

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30)


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def wait_port_closed(port: int, timeout: float = 30.0) -> None:
    poll_until(lambda: not port_open(port), f"port {port} to close", timeout, interval=0.2)


def base_env(tmp_path: Path) -> dict[str, str]:
    return {
        "HOME": str(tmp_path / "home"),  # no operator config file is read
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "CASCADE_LAUNCHER": "manual",
        "CASCADE_S3_PORT": str(free_port()),  # never the default 9020 another server may hold
        "TERM": "screen-256color",
        "PATH": os.environ.get("PATH", ""),
    }


CASCADE = f"{shlex.quote(sys.executable)} -m cascade_tui.cli"
