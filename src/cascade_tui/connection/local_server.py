"""The Cascade server of this machine's data directory, as `cascade up` leaves it for the other
commands to find: its token (`DATA_DIR/token`, written by `cascade serve`) and the URL `cascade up`
started it at (`DATA_DIR/url`: 8001 when another program held 8000).

A command given no URL (no flag, CASCADE_URL or config file) uses the recorded URL while a Cascade
server answers there, else the default; given neither URL nor token, it reads the token file.
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx

URL_FILE = "url"
TOKEN_FILE = "token"


def default_data_dir(environ: dict[str, str] | os._Environ[str] | None = None) -> Path:
    """Where `cascade serve` keeps its data by default (CASCADE_DATA_DIR, else XDG)."""
    env = os.environ if environ is None else environ
    if env.get("CASCADE_DATA_DIR"):
        return Path(env["CASCADE_DATA_DIR"]).expanduser()
    xdg = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg) / "cascade"


def health(url: str, timeout: float = 2.0) -> dict | None:
    """The health answer of a Cascade server at `url`, or None if nothing (Cascade) answers."""
    try:
        resp = httpx.get(f"{url}/api/health", timeout=timeout)
        body = resp.json()
    except (httpx.HTTPError, ValueError):
        return None
    return body if isinstance(body, dict) and body.get("ok") is True else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def read_token_file(data_dir: Path) -> str | None:
    return _read(data_dir / TOKEN_FILE)


def recorded_url(data_dir: Path) -> str | None:
    return _read(data_dir / URL_FILE)


def record_url(data_dir: Path, url: str) -> None:
    """Note where the server `cascade up` started listens; private like the rest of the directory."""
    try:
        fd = os.open(data_dir / URL_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(url + "\n")
    except OSError:
        pass  # a nicety for other commands: never a reason not to start


def forget_url(data_dir: Path, url: str) -> None:
    """Remove the record once its server stopped, unless another `cascade up` wrote its own since."""
    if recorded_url(data_dir) == url:
        try:
            (data_dir / URL_FILE).unlink()
        except OSError:
            pass


def local_server(
    url: str, url_given: bool, token: str | None, data_dir: Path | None = None
) -> tuple[str, str | None]:
    """The URL and token a command should use. `url_given`: the operator chose the URL (flag,
    CASCADE_URL, config file), which always wins and never gets the local token file."""
    if url_given:
        return url, token
    data = data_dir or default_data_dir()
    recorded = recorded_url(data)
    if recorded and recorded.rstrip("/") != url and health(recorded) is not None:
        url = recorded.rstrip("/")
    return url, token or read_token_file(data)


def stand_in_hint(url: str, token: str | None, timeout: float = 3.0) -> str | None:
    """The one line `cascade up` says when the server runs the stand-in: how to get the real
    simulator. None when it runs a real one, or cannot say."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        body = httpx.get(f"{url}/api/launcher", headers=headers, timeout=timeout).json()
    except (httpx.HTTPError, ValueError):
        return None
    simulator = body.get("simulator") if isinstance(body, dict) else None
    if not isinstance(simulator, dict) or simulator.get("kind") != "stand-in":
        return None
    return (
        "sims run the stand-in (recorded numbers, not your trace): for real Accel-Sim run "
        "`cascade simulator install` (about 5 minutes, no CUDA needed) or press A in the UI"
    )
