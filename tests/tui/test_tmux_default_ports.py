"""Issue 13: `cascade up` in a real terminal (tmux) while the default ports, 8000 for the app and
9020 for the embedded S3 endpoint, are held by other programs: it says so, starts on free ports,
opens the UI, and stops its server on quit."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import pytest

from cascade_tui import up
from cascade_tui.connection.config import DEFAULT_URL
from cascade_tui.connection.ports import DEFAULT_S3_PORT

from .tmux import CASCADE, TMUX, Tmux, base_env, port_open, wait_port_closed

pytestmark = TMUX

DEFAULT_APP_PORT = int(DEFAULT_URL.rsplit(":", 1)[1])


@contextmanager
def hold(port: int) -> Iterator[None]:
    """Listen on `port` like another program would; when one already does, it is taken anyway,
    unless that one is a Cascade server (`cascade up` would rightly use it: nothing to test).
    SO_REUSEADDR, as `cascade up` checks: without it, connections a previous test left in
    TIME_WAIT on the port make the bind fail, the port is not held, and `cascade up` rightly
    takes it."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen()
        except OSError:
            if port == DEFAULT_APP_PORT and up.health(DEFAULT_URL) is not None:
                pytest.skip(f"a Cascade server already runs at {DEFAULT_URL}")
        yield


def test_cascade_up_starts_on_free_ports_when_the_defaults_are_taken(tmp_path):
    env = base_env(tmp_path)
    del env["CASCADE_S3_PORT"]  # the default, so `cascade up` may move it
    with ExitStack() as stack:
        stack.enter_context(hold(DEFAULT_APP_PORT))
        stack.enter_context(hold(DEFAULT_S3_PORT))
        tmux = Tmux(f"{CASCADE} up --data-dir {tmp_path / 'data'}", env, size=(160, 45))
        try:
            screen = tmux.wait_for("sample run: real Accel-Sim results", timeout=90)
            assert "Cascade · Runs" in screen
            credentials = (tmp_path / "data" / "s3-credentials.json").read_text()
            s3_port = int(re.search(r'"endpoint": "http://127.0.0.1:(\d+)"', credentials).group(1))
            assert s3_port != DEFAULT_S3_PORT and port_open(s3_port)
            tmux.keys("q")
            screen = tmux.wait_for("EXITED 0", timeout=60)
        finally:
            tmux.kill()
    # What it said before the UI took the screen, there again once it is gone:
    said = " ".join(screen.split())  # lines wrap at the pane's width
    match = re.search(r"port 8000 is taken by another program: the server listens on (\d+) instead", said)
    assert match, screen
    app_port = int(match.group(1))
    assert f"port 9020 is taken: the embedded S3 endpoint listens on {s3_port} instead" in said
    assert f"started `cascade serve` at http://127.0.0.1:{app_port}" in said
    # No simulator installed: it says once how to get the real one (issue 18).
    assert (
        said.count(
            "cascade up: sims run the stand-in (recorded numbers, not your trace): for real "
            "Accel-Sim run `cascade simulator install`"
        )
        == 1
    )
    assert "stopped the server it started" in said
    wait_port_closed(app_port)
    wait_port_closed(s3_port)
