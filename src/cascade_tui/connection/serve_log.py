"""The line of `serve.log` that says why `cascade serve` stopped before it was ready. Pure."""

from __future__ import annotations

import re

# `KeyError: 'x'`, `OSError: [Errno 98] ...`: the last line of a traceback names the exception.
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit)\b.*:")


def cause_from_log(text: str) -> str | None:
    """The cause among what one start wrote: `cascade serve`'s own one-line exit message, else
    the exception a traceback ends with, else the last ERROR line, else None."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith("cascade serve: "):
            return line.removeprefix("cascade serve: ")
    for line in reversed(lines):
        if _EXCEPTION.match(line):
            return line
    for line in reversed(lines):
        if " ERROR " in line or " CRITICAL " in line:
            return line
    return None
