"""How the client names what it asks for and saves: a path segment, a list route's query string,
a downloaded file's name. Pure."""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import quote, urlencode

import httpx

from cascade_core.models import FILE_NAME_PATTERN

_FILE_NAME = re.compile(FILE_NAME_PATTERN)


def path_segment(trace_id: str) -> str:
    """A trace id as one path segment: the bucket's prefixes may hold any character (a refused id
    such as `x\n` is still a failed trace to show and delete), and an unquoted control character
    is not a URL at all."""
    return quote(trace_id, safe="")


def list_path(path: str, states: Sequence[str], limit: int | None) -> str:
    """A list route with its `state` and `limit` filters as a query string."""
    params = {k: v for k, v in (("state", ",".join(states)), ("limit", limit)) if v}
    return f"{path}?{urlencode(params)}" if params else path


def attachment_name(resp: httpx.Response) -> str | None:
    disposition = resp.headers.get("content-disposition", "")
    match = re.search(r'filename="?([^";]+)"?', disposition)
    return match.group(1) if match else None


def safe_file_name(name: str) -> str:
    name = name.rsplit("/", 1)[-1]
    if not _FILE_NAME.fullmatch(name):
        name = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:128].strip(".") or "download"
    return name
