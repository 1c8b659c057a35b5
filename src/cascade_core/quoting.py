"""Quoting what a user sent in an error message, briefly: a 100,000-character label or a
3,000-character option name must not come back whole in a 422's `detail`. Every message that
quotes a label, an option name or value, or a config name goes through `quoted`. Pure."""

from __future__ import annotations

# The most characters of user input a message repeats.
QUOTE_LIMIT = 60


def clipped(text: str, limit: int = QUOTE_LIMIT) -> str:
    """`text`, or its first `limit` characters, an ellipsis and its length when it is longer."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def quoted(value: object, limit: int = QUOTE_LIMIT) -> str:
    """`repr(value)` (`'SM7_QV100'`), or for a long one its first `limit` characters' repr, an
    ellipsis and its length: `'aaaa…'… (100,000 characters)`."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return repr(value)
    return f"{text[:limit]!r}… ({len(text):,} characters)"
