"""What the web UI reads from a browser, parsed without trusting it (pure): the token form, the
`?fontsize=`/`?width=` numbers and the websocket's messages. Anything else is refused with a
sentence (the form) or ignored (a message); none of it may raise anything but `FormError`."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qs

FORM_TYPE = "application/x-www-form-urlencoded"
MAX_FORM_BYTES = 4096  # a token form is a few dozen bytes
_DIGITS = re.compile(r"[0-9]{1,6}")  # ASCII only: "²".isdigit() is true, and int("²") raises
_TERMINAL_SIDE = (10, 1000)  # columns or rows a tab may ask for


class FormError(ValueError):
    """A login body that is not the token form; the message is one sentence for the client."""


def bounded_int(value: str | None, low: int, high: int, default: int) -> int:
    """A query parameter as a number from low to high: the default when it is not ASCII digits."""
    if value is None or not _DIGITS.fullmatch(value):
        return default
    return max(low, min(int(value), high))


def login_token(body: bytes, content_type: str, charset: str | None) -> str:
    """The `token` field of the login page's form: URL-encoded UTF-8, as its <form> sends it."""
    if content_type != FORM_TYPE:
        raise FormError(f"the login form must be sent as {FORM_TYPE}")
    if charset is not None and charset.lower().replace("_", "-") not in (
        "utf-8",
        "utf8",
        "us-ascii",
        "ascii",
    ):
        raise FormError("the login form must be sent in UTF-8")
    try:
        text = body.decode("utf-8")
        fields = parse_qs(text, keep_blank_values=True, max_num_fields=8, errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise FormError("the login form is not URL-encoded UTF-8") from None
    return (fields.get("token") or [""])[-1].strip()


def websocket_message(text: str) -> tuple[str, Any] | None:
    """A message of textual-serve's page, `["kind", data]`; None for anything else."""
    try:
        message = json.loads(text)
    except ValueError:
        return None
    if not isinstance(message, list) or len(message) != 2 or not isinstance(message[0], str):
        return None
    return message[0], message[1]


def terminal_size(data: Any) -> tuple[int, int] | None:
    """The (width, height) of a `resize` message, each within 10..1000; None when it is not one."""
    if not isinstance(data, dict):
        return None
    width, height = data.get("width"), data.get("height")
    if (
        not isinstance(width, int)
        or not isinstance(height, int)
        or isinstance(width, bool)
        or isinstance(height, bool)
    ):
        return None
    low, high = _TERMINAL_SIDE
    return max(low, min(width, high)), max(low, min(height, high))
