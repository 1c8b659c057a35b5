"""What the Runs and Traces lists show of their items: the `/` filter and the `s`/`S` sort.

Pure (no Textual): the screens hand in each item's searchable text and sort value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


def matches(text: str, query: str) -> bool:
    """Every word of `query` is somewhere in `text`, case ignored (`sm75 failed` finds failed
    runs on an SM75 config)."""
    haystack = text.lower()
    return all(word in haystack for word in query.lower().split())


def shown(
    items: Sequence[T],
    query: str,
    text_of: Callable[[T], str],
    sort_key: Callable[[T], Any] | None = None,
    reverse: bool = False,
) -> list[T]:
    """The items the filter keeps, in the chosen order (the server's when `sort_key` is None);
    a stable sort, so equal values keep the server's order (newest first)."""
    kept = [item for item in items if not query or matches(text_of(item), query)]
    if sort_key is not None:
        kept.sort(key=sort_key, reverse=reverse)
    return kept


def next_column(current: int | None, count: int) -> int | None:
    """`s`: the next column to sort by, after the last back to the server's order (None)."""
    if current is None:
        return 0 if count else None
    return current + 1 if current + 1 < count else None
