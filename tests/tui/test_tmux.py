"""`cascade up` and `cascade tui` in a real terminal: tmux runs them, the test sends keys and reads
the pane as an operator would see it. Needs tmux (`.ci/run` installs it when missing)."""

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

pytestmark = [
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


def test_cascade_up_starts_a_server_shows_the_sample_run_and_stops_it_on_quit(tmp_path):
    port = free_port()
    tmux = Tmux(
        f"{CASCADE} up --url http://127.0.0.1:{port} --data-dir {tmp_path / 'data'}", base_env(tmp_path)
    )
    try:
        screen = tmux.wait_for("sample run: real Accel-Sim results", timeout=90)
        assert "Cascade · Runs" in screen and "✔ succeeded" in screen, screen
        assert port_open(port)
        token = (tmp_path / "data" / "token").read_text().strip()
        assert token not in screen  # never shows the token

        tmux.keys("Enter")
        screen = tmux.wait_for("● LIVE")
        tmux.wait_for("sample run: real Accel-Sim results")  # said plainly
        screen = tmux.wait_for("SM7_TITANV")
        assert screen.count("✔ succeeded") >= 3
        tmux.keys("k")
        screen = tmux.wait_for("Total simulated time per config")
        assert "is fastest" in screen or "tie for fastest" in screen, screen

        tmux.keys("Escape")  # back to runs
        tmux.wait_for("Cascade · Runs")
        tmux.keys("q")  # quit (q quits on every screen): the UI exits and stops its server
        tmux.wait_for("EXITED 0", timeout=60)
        wait_port_closed(port)
    finally:
        tmux.kill()


def test_cascade_tui_with_a_wrong_token_says_so(tmp_path):
    port = free_port()
    serve = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cascade_tui.cli",
            "serve",
            "--port",
            str(port),
            "--data-dir",
            str(tmp_path / "data"),
        ],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("CASCADE_")},
            "CASCADE_LAUNCHER": "manual",
            "CASCADE_SAMPLES": "0",
            "CASCADE_S3_PORT": str(free_port()),
        },
    )
    tmux = None
    try:
        poll_until(lambda: port_open(port) or serve.poll() is not None, "the server to start", 60)
        assert serve.poll() is None, "the server exited instead of starting"
        env = base_env(tmp_path) | {
            "CASCADE_URL": f"http://127.0.0.1:{port}",
            "CASCADE_TOKEN": "not-the-token",
        }
        tmux = Tmux(f"{CASCADE} tui", env, size=(80, 24))
        tmux.wait_for("Wrong or missing token")
        tmux.wait_for("Check CASCADE_TOKEN")
        assert "not-the-token" not in tmux.pane()
        tmux.keys("q")
        tmux.wait_for("EXITED 0")
    finally:
        if tmux:
            tmux.kill()
        serve.terminate()
        serve.wait(30)


def test_terminal_going_away_exits_the_ui_and_stops_the_server(tmp_path):
    port = free_port()
    tmux = Tmux(
        f"{CASCADE} up --url http://127.0.0.1:{port} --data-dir {tmp_path / 'data'}", base_env(tmp_path)
    )
    try:
        tmux.wait_for("sample run: real Accel-Sim results", timeout=90)
        assert port_open(port)
    finally:
        tmux.kill()  # the terminal goes away: the UI gets SIGHUP
    wait_port_closed(port)
