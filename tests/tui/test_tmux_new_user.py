"""Issue 32, a new user with the README: `cascade up` honours CASCADE_PORT as `cascade serve` does,
says where the same UI is in a browser and where its token is, and the other commands, given the
server's URL in CASCADE_URL, still find the local server's token. In a real terminal (tmux)."""

from __future__ import annotations

import asyncio
import os
import re

from cascade_tui.connection import local_server
from tests.conftest import free_port
from tests.helpers import run_cascade

from .tmux import CASCADE, TMUX, Tmux, base_env, port_open, wait_port_closed

pytestmark = TMUX


def test_cascade_serves_own_settings_say_where_up_starts_it():
    assert local_server.serve_url({}) is None  # the default, http://127.0.0.1:8000
    assert local_server.serve_url({"CASCADE_PORT": "8123"}) == "http://127.0.0.1:8123"
    assert local_server.serve_url({"CASCADE_HOST": "0.0.0.0", "CASCADE_PORT": "9"}) == "http://127.0.0.1:9"
    assert local_server.serve_url({"CASCADE_HOST": "::1"}) == "http://[::1]:8000"


def test_a_loopback_url_gets_the_local_token_file_and_another_never(tmp_path, monkeypatch):
    (tmp_path / "token").write_text("local-token\n")
    answers = {"ok": True, "auth": True}
    monkeypatch.setattr(local_server, "health", lambda url, timeout=2.0: answers)
    for url in ("http://127.0.0.1:8123", "http://localhost:8123", "http://[::1]:8123"):
        assert local_server.local_server(url, True, None, tmp_path) == (url, "local-token")
    assert local_server.local_server("http://127.0.0.1:8123", True, "given", tmp_path)[1] == "given"
    assert local_server.local_server("https://cascade.lab.example", True, None, tmp_path)[1] is None
    answers = None  # another program on the port, no Cascade server: it never gets the token
    assert local_server.local_server("http://127.0.0.1:8123", True, None, tmp_path)[1] is None


async def test_cascade_up_on_cascade_port_says_its_browser_url_and_commands_find_its_token(tmp_path):
    port = free_port()
    data = tmp_path / "data"
    env = {**base_env(tmp_path), "CASCADE_PORT": str(port), "CASCADE_DATA_DIR": str(data)}
    tmux = Tmux(f"{CASCADE} up", env, size=(200, 45))  # wide: its lines are not wrapped mid-word
    try:
        screen = await asyncio.to_thread(tmux.wait_for, "sample run: real Accel-Sim results", 90)
        assert f"http://127.0.0.1:{port}" in screen and port_open(port)  # not 8000
        token = (data / "token").read_text().strip()
        # Another terminal names the server by CASCADE_URL only: its token is found all the same.
        others = {
            "HOME": env["HOME"],
            "XDG_CONFIG_HOME": env["XDG_CONFIG_HOME"],
            "CASCADE_DATA_DIR": str(data),
            "CASCADE_URL": f"http://127.0.0.1:{port}",
            "PATH": os.environ.get("PATH", ""),
        }
        runs = await run_cascade("runs", env=others)
        assert runs.code == 0 and "sample" in runs.out, runs.err
        tmux.keys("q")
        screen = await asyncio.to_thread(tmux.wait_for, "EXITED 0", 60)
    finally:
        tmux.kill()
    said = " ".join(screen.split())
    assert f"started `cascade serve` at http://127.0.0.1:{port}" in said
    match = re.search(r"the same UI in a browser: (\S+) \(it asks for the token: cat (\S+)\)", said)
    assert match and match.group(1) == f"http://127.0.0.1:{port}/", said
    assert match.group(2).endswith("data/token") and token not in said
    wait_port_closed(port)
