"""The Cascade server of this machine's data directory, as `cascade up` leaves it for the other
commands to find: its token (`DATA_DIR/token`, written by `cascade serve`) and the URL `cascade up`
started it at (`DATA_DIR/url`: 8001 when another program held 8000).

A command given no URL (no flag, CASCADE_URL or config file) uses the recorded URL while a Cascade
server answers there, else the one `cascade serve` listens at by its own settings (CASCADE_HOST and
CASCADE_PORT, else http://127.0.0.1:8000: `serve_url`). Given no token, a command whose server is
on this machine (no URL, or a loopback one) reads the token file.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

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


def serve_url(environ: Mapping[str, str] | None = None) -> str | None:
    """Where `cascade serve` listens by its own settings when CASCADE_PORT or CASCADE_HOST says
    (a wildcard host is reached on 127.0.0.1), else None: the default, http://127.0.0.1:8000."""
    env = os.environ if environ is None else environ
    host, port = env.get("CASCADE_HOST", "").strip(), env.get("CASCADE_PORT", "").strip()
    if not host and not port:
        return None
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    netloc = f"[{host}]" if ":" in host else host
    return f"http://{netloc}:{port or 8000}"


def is_loopback_url(url: str) -> bool:
    """A URL of this machine: `localhost`, 127.0.0.0/8 or ::1."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def local_server(
    url: str, url_given: bool, token: str | None, data_dir: Path | None = None
) -> tuple[str, str | None]:
    """The URL and token a command should use. `url_given`: the operator chose the URL (flag,
    CASCADE_URL, config file), which always wins. Given no token, a Cascade server on this machine
    (no URL given, or a loopback one: `cascade up --url http://127.0.0.1:8123` started it) gets
    the token file of this machine's data directory; a server elsewhere, or a program that is no
    Cascade server, never does."""
    data = data_dir or default_data_dir()
    if url_given:
        # Only to a Cascade server (asked without a token): another program on a port of this
        # machine never gets it.
        local = token is None and is_loopback_url(url) and health(url) is not None
        return url, token or (read_token_file(data) if local else None)
    url = serve_url() or url
    recorded = recorded_url(data)
    if recorded and recorded.rstrip("/") != url and health(recorded) is not None:
        url = recorded.rstrip("/")
    return url, token or read_token_file(data)


def browser_url(url: str, timeout: float = 3.0) -> str | None:
    """The server's UI in a browser (`cascade serve` serves it at `/` unless --no-web), or None
    when it serves none there."""
    try:
        resp = httpx.get(f"{url}/", timeout=timeout)
    except httpx.HTTPError:
        return None
    html = resp.status_code == 200 and resp.headers.get("content-type", "").startswith("text/html")
    return f"{url}/" if html else None


def token_words(token: str | None, data_dir: Path) -> str:
    """Where the token a browser asks for is: the data directory's token file when it holds it
    (`~` for the home directory), else CASCADE_TOKEN; never the token itself."""
    path = data_dir / TOKEN_FILE
    if token is None or read_token_file(data_dir) != token:
        return "your CASCADE_TOKEN"
    try:
        return f"cat ~/{path.resolve().relative_to(Path.home().resolve())}"
    except (ValueError, OSError, RuntimeError):
        return f"cat {path}"


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
