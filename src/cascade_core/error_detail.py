"""What an API error response says, in one line: its body's `detail` (the spec's error body is
`{"detail": "..."}`), else the status line. One reading for every client (the UI and the script
commands' `CascadeClient`, the worker's `SimClient` and trace fetch). Pure: it reads a response
already received (httpx's, or anything with the same three members)."""

from __future__ import annotations

import json
from typing import Any, Protocol


class ErrorResponse(Protocol):
    @property
    def status_code(self) -> int: ...
    @property
    def reason_phrase(self) -> str: ...
    def json(self) -> Any: ...


# A structured detail is cut to this many characters: one line, not a screenful.
DETAIL_MAX = 300


def error_detail(response: ErrorResponse) -> str:
    """The body's `detail`, else the reason. A 422's list of field errors (`[{"loc": [...],
    "msg": ...}]`) reads as `entries.0.shards: Input should be ...`; any other structure as
    JSON; either cut to DETAIL_MAX characters."""
    fallback = response.reason_phrase or f"HTTP {response.status_code}"
    try:
        body = response.json()
    except ValueError:  # not JSON, or not UTF-8 (both are ValueErrors)
        return fallback
    if isinstance(body, dict) and "detail" in body:
        detail = body["detail"]
        if isinstance(detail, str):
            return detail
        fields = _field_errors(detail)
        return (fields if fields is not None else json.dumps(detail))[:DETAIL_MAX]
    return fallback


def _field_errors(detail: Any) -> str | None:
    """`loc: msg; loc: msg` for a list of field errors (the body's own `body` prefix left out),
    None for anything else."""
    if not isinstance(detail, list) or not detail:
        return None
    parts = []
    for error in detail:
        if not isinstance(error, dict) or not isinstance(error.get("msg"), str):
            return None
        loc = [str(part) for part in error.get("loc") or [] if part != "body"]
        parts.append(f"{'.'.join(loc)}: {error['msg']}" if loc else error["msg"])
    return "; ".join(parts)
