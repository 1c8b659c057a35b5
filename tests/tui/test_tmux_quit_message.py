"""`cascade up` in a real terminal, quit with sims unfinished: the line it prints once the UI is
gone says what became of them (kept running without the server, then, on the next `cascade up`,
cancelled)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from tests.conftest import free_port

from .helpers import poll_until
from .tmux import CASCADE, TMUX, Tmux, base_env, wait_port_closed

pytestmark = TMUX


def squeezed(text: str) -> str:
    """`text` without any whitespace: the terminal wraps long lines anywhere, even inside words."""
    return "".join(text.split())


@contextmanager
def cascade_up(command: str, env: dict[str, str], port: int) -> Iterator[Tmux]:
    """`command` in a terminal of 200x45, gone at the end, its server's port closed after it."""
    tmux = Tmux(command, env, size=(200, 45))
    try:
        yield tmux
    finally:
        tmux.kill()
    wait_port_closed(port)


def quit_with(tmux: Tmux, question: str, answer: str) -> str:
    """`q`, then `answer` to the quit question (which says `question`): the terminal after."""
    tmux.keys("q")
    tmux.wait_for(question)
    tmux.keys(answer)
    return tmux.wait_for("EXITED 0", timeout=60)


def test_quitting_cascade_up_says_what_became_of_unfinished_sims(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = f"{CASCADE} up --url {url} --data-dir {tmp_path / 'data'}"
    env = base_env(tmp_path)  # the manual launcher: sims stay pending until cancelled

    with cascade_up(command, env, port) as tmux:
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
        screen = quit_with(tmux, "quit, they keep running", "q")
        assert squeezed(
            f"cascade up: stopped the server it started; 2 sims of {run_id} keep running "
            "without it and report their output once a server is back on this data directory "
            "(`cascade up` again; cancel them there with x)"
        ) in squeezed(screen), screen

    with cascade_up(command, env, port) as tmux:  # the next `cascade up`: the run is still there
        tmux.wait_for(run_id, timeout=90)
        screen = quit_with(tmux, "cancel the runs and quit", "c")
        assert squeezed(
            f"cascade up: cancelled 2 sims of {run_id} (their workers were told to stop); "
            "stopped the server it started"
        ) in squeezed(screen), screen
