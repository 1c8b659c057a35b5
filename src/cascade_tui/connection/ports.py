"""Ports for a server `cascade up` starts: when the default ones are taken (another program on
8000, an S3 endpoint on 9020), the next free ones, and what to tell the operator."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from urllib.parse import urlsplit, urlunsplit

# `cascade serve`'s default for its embedded S3 endpoint (cascade_server.settings.Settings.s3_port;
# the UI imports nothing of the server but its models, tests/tui/test_up_ports.py keeps them equal).
DEFAULT_S3_PORT = 9020
SEARCH = 100  # ports tried after a taken one before asking the system for any free port


def port_taken(host: str, port: int) -> bool:
    """True when `host:port` cannot be listened on (SO_REUSEADDR, as aiohttp and rclone bind, so
    a port in TIME_WAIT counts as free)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def free_port_after(host: str, port: int) -> int:
    """The first free port after `port` (easy to remember), else any free one."""
    for candidate in range(port + 1, min(port + SEARCH, 65535) + 1):
        if not port_taken(host, candidate):
            return candidate
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def choose_free_ports(
    url: str,
    environ: Mapping[str, str],
    *,
    url_chosen: bool = False,
) -> tuple[str, dict[str, str], list[str]]:
    """For a server to start at `url`: the URL to use, the environment `cascade serve` needs for it
    (CASCADE_S3_PORT), and a sentence per port that changed. A port the operator chose is left
    alone: the app's when `url_chosen`, the embedded S3 endpoint's when CASCADE_S3_PORT or an
    external endpoint (CASCADE_S3_ENDPOINT) is set."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    env: dict[str, str] = {}
    notes: list[str] = []
    if not url_chosen and port_taken(host, port):
        new = free_port_after(host, port)
        url = urlunsplit(parts._replace(netloc=f"{host}:{new}"))
        notes.append(
            f"port {port} is taken by another program: the server listens on {new} instead "
            f"({url}; --url or CASCADE_URL to choose)"
        )
    if not environ.get("CASCADE_S3_ENDPOINT") and not environ.get("CASCADE_S3_PORT"):
        if port_taken("127.0.0.1", DEFAULT_S3_PORT):
            new = free_port_after("127.0.0.1", DEFAULT_S3_PORT)
            env["CASCADE_S3_PORT"] = str(new)
            notes.append(
                f"port {DEFAULT_S3_PORT} is taken: the embedded S3 endpoint listens on {new} instead "
                "(`cascade upload` on this machine finds it; CASCADE_S3_PORT to choose)"
            )
    return url, env, notes
