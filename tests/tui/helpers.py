"""Helpers for the TUI's Pilot tests: screen text, waiting on the app, playing a simulator."""

from __future__ import annotations

import difflib
import io
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from pydantic import SecretStr
from rich.console import Console
from textual.app import App

from cascade_tui.app import CascadeApp
from cascade_tui.connection.config import TuiSettings

# The suite's one copy of each (tests/helpers.py), for the TUI tests as for the rest.
from tests.helpers import REPO as REPO
from tests.helpers import ServeProcess as ServeProcess
from tests.helpers import recorded_log as recorded_log
from tests.helpers import wait_until

SNAPSHOTS = Path(__file__).with_name("snapshots")


def screen_text(app: CascadeApp) -> str:
    """The screen as an operator sees it, as plain text (modal backgrounds included).

    Textual has no public plain-text render of the screen stack (`export_screenshot` makes SVG
    the same way), so this uses its compositor: pyproject.toml pins Textual to the tested range."""
    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        record=True,
        color_system=None,
        legacy_windows=False,
        safe_box=False,
    )
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text(styles=False)


def poll_until(
    condition: Callable[[], object],
    what: Callable[[], str] | str,
    timeout: float = 30.0,
    interval: float = 0.1,
) -> None:
    """Outside a Pilot (processes, ports, a tmux pane): poll `condition` until it holds, failing
    with `what` (a text, or a function giving one: the state that was not reached) after `timeout`."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout}s waiting for {what() if callable(what) else what}"
            )
        time.sleep(interval)


async def wait_for_app(pilot, condition: Callable[[], object], what: str, timeout: float = 30.0) -> None:
    """`wait_until` `condition` holds while the app under `pilot` runs (its pause between looks),
    failing with `what` and the screen after `timeout`."""
    await wait_until(
        condition, timeout, 0.05, what=lambda: f"{what}\n{screen_text(pilot.app)}", pause=pilot.pause
    )


def record_notifications(app: App) -> Callable[[], list[str]]:
    """The text of every notification from now on, read through the public `App.notify` (every
    widget's `notify` calls it)."""
    seen: list[str] = []
    notify = app.notify

    def recording(message: str, *args: Any, **kwargs: Any) -> None:
        seen.append(str(message))
        notify(message, *args, **kwargs)

    app.notify = recording  # type: ignore[method-assign]
    return lambda: list(seen)


async def wait_for_text(pilot, text: str, timeout: float = 30.0) -> str:
    await wait_for_app(pilot, lambda: text in screen_text(pilot.app), f"{text!r} on screen", timeout)
    return screen_text(pilot.app)


def tui_settings(url: str, token: str | None, tmp_path: Path, **kw) -> TuiSettings:
    values: dict[str, Any] = dict(
        url=url,
        token=SecretStr(token) if token else None,
        download_dir=tmp_path / "downloads",
        config=tmp_path / "no-config.toml",
        refresh_hz=4.0,
    )
    values.update(kw)
    return TuiSettings(**values)


class Simulator:
    """Plays one sim through the real simulator endpoints, as `cascade worker` would."""

    def __init__(self, http: httpx.AsyncClient, sim_id: str) -> None:
        self.http = http
        self.sim_id = sim_id
        self.seq = 0

    async def beat(self, state: str = "running", **kw) -> dict:
        resp = await self.http.post(f"/api/sims/{self.sim_id}/heartbeat", json={"state": state, **kw})
        resp.raise_for_status()
        return resp.json()

    async def log(self, lines: list[str], chunk: int = 2000) -> None:
        for start in range(0, len(lines), chunk):
            resp = await self.http.post(
                f"/api/sims/{self.sim_id}/logs", json={"seq": self.seq, "lines": lines[start : start + chunk]}
            )
            resp.raise_for_status()
            self.seq += 1

    async def put_file(self, name: str, data: bytes) -> None:
        resp = await self.http.put(
            f"/api/sims/{self.sim_id}/files/{name}",
            content=data,
            headers={"Content-Type": "application/octet-stream"},
        )
        resp.raise_for_status()


_VOLATILE: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    (re.compile(r"\b(run|sim)-[0-9a-f]{12}\b"), r"\1-############"),
    # A time and the padding around it: a column of ages is as wide as its widest age, so a test
    # that ran slower (`12s` instead of `9s`) shifts the columns after it by a space.
    (
        re.compile(r" *\b\d+(\.\d+)?\s?(s|m\d\ds|h\d\dm|ms)\b(?!\w)( +(?=\S))?"),
        lambda m: (" " if m.group(0).startswith(" ") else "") + "<t>" + (" " if m.group(3) else ""),
    ),
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:<port>"),
]


def normalise(text: str) -> str:
    """Mask what differs between runs (generated ids, ages, ports) for snapshot comparison."""
    out = []
    for line in text.splitlines():
        for pattern, repl in _VOLATILE:
            line = pattern.sub(repl, line)
        out.append(line.rstrip())
    return "\n".join(out).rstrip() + "\n"


def assert_snapshot(name: str, text: str, update: bool) -> None:
    """Compare a plain-text screen with tests/tui/snapshots/<name>.txt (CASCADE_UPDATE_SNAPSHOTS=1
    rewrites it). The stored file is what an operator sees, so a diff reads as a screen change."""
    path = SNAPSHOTS / f"{name}.txt"
    actual = normalise(text)
    if update or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual)
        if not update:
            raise AssertionError(f"snapshot {path.name} did not exist; written, check it in")
        return
    expected = path.read_text()
    if actual != expected:
        # The changed lines first: a long report is cut in its middle by CI's log excerpt.
        diff = "\n".join(
            difflib.unified_diff(
                expected.splitlines(), actual.splitlines(), "expected", "actual", n=1, lineterm=""
            )
        )
        raise AssertionError(f"screen {name} changed:\n{diff}\n--- the whole screen now\n{actual}")


_BOX = re.compile(r"[█▌▐▀▄│┃▊▎▔▁╭╮╰╯─━]")


def flat(text: str) -> str:
    """Screen text as one line without borders: for checking wrapped messages."""
    return " ".join(_BOX.sub(" ", text).split())


async def wait_for_flat_text(pilot, text: str, timeout: float = 30.0) -> str:
    """Like wait_for_text for a message that may wrap across lines inside a bordered box."""
    await wait_for_app(pilot, lambda: text in flat(screen_text(pilot.app)), f"{text!r} on screen", timeout)
    return flat(screen_text(pilot.app))
