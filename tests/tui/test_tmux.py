"""`cascade up` and `cascade tui` in a real terminal: tmux runs them, the test sends keys and reads
the pane as an operator would see it. Needs tmux (`.ci/run` installs it when missing)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import free_port

from .helpers import REPO, poll_until
from .tmux import CASCADE, TMUX, Tmux, base_env, port_open, wait_port_closed

pytestmark = TMUX


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
        tmux.wait_for("Cascade · run-")  # the run's screen
        tmux.wait_for("sample run: real Accel-Sim results")  # said plainly
        screen = tmux.wait_for("SM7_TITANV  ")  # its row in the sims table
        assert screen.count("✔ succeeded") >= 3
        assert "LIVE" not in screen  # a finished run: nothing on it is live (issue 32)
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
