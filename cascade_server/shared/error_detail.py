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


def error_detail(response: ErrorResponse) -> str:
    """The body's `detail` (a structured one as JSON, cut to 300 characters), else the reason."""
    fallback = response.reason_phrase or f"HTTP {response.status_code}"
    try:
        body = response.json()
    except ValueError:  # not JSON, or not UTF-8 (both are ValueErrors)
        return fallback
    if isinstance(body, dict) and "detail" in body:
        detail = body["detail"]
        return detail if isinstance(detail, str) else json.dumps(detail)[:300]
    return fallback
