"""`cascade up` in a real terminal, quit with sims unfinished: the line it prints once the UI is
gone says what became of them (kept running without the server, then, on the next `cascade up`,
cancelled)."""

from __future__ import annotations

import httpx

from tests.conftest import free_port

from .helpers import poll_until
from .test_tmux import CASCADE, Tmux, base_env, pytestmark, wait_port_closed  # noqa: F401


def squeezed(text: str) -> str:
    """`text` without any whitespace: the terminal wraps long lines anywhere, even inside words."""
    return "".join(text.split())


def test_quitting_cascade_up_says_what_became_of_unfinished_sims(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = f"{CASCADE} up --url {url} --data-dir {tmp_path / 'data'}"
    env = base_env(tmp_path)  # the manual launcher: sims stay pending until cancelled

    tmux = Tmux(command, env, size=(200, 45))
    try:
        tmux.wait_for("Cascade · Runs", timeout=90)
        headers = {"Authorization": f"Bearer {(tmp_path / 'data' / 'token').read_text().strip()}"}
        trace = "tinyformer-step-sm70"  # a demo trace, uploaded through the embedded endpoint
        poll_until(
            lambda: httpx.get(f"{url}/api/traces/{trace}", headers=headers).json().get("state") == "ready",
            "the demo trace to be ready",
            90,
        )
        resp = httpx.post(
            f"{url}/api/runs",
            headers=headers,
            json={"trace_id": trace, "entries": [{"gpu_config": "SM7_QV100", "count": 2}]},
        )
        assert resp.status_code == 201, resp.text
        run_id = resp.json()["id"]
        tmux.wait_for(run_id)
        tmux.keys("q")
        tmux.wait_for("quit, they keep running")
        tmux.keys("q")
        screen = tmux.wait_for("EXITED 0", timeout=60)
        assert squeezed(
            f"cascade up: stopped the server it started; 2 sims of {run_id} keep running "
            "without it and report their output once a server is back on this data directory "
            "(`cascade up` again; cancel them there with x)"
        ) in squeezed(screen), screen
    finally:
        tmux.kill()
    wait_port_closed(port)

    tmux = Tmux(command, env, size=(200, 45))  # the next `cascade up`: the run is still there
    try:
        tmux.wait_for(run_id, timeout=90)
        tmux.keys("q")
        tmux.wait_for("cancel the runs and quit")
        tmux.keys("c")
        screen = tmux.wait_for("EXITED 0", timeout=60)
        assert squeezed(
            f"cascade up: cancelled 2 sims of {run_id} (their workers were told to stop); "
            "stopped the server it started"
        ) in squeezed(screen), screen
    finally:
        tmux.kill()
    wait_port_closed(port)
