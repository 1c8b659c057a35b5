"""A step timeline as the server stores it: what a simulator sent, of any shape. The server checks
only what the spec says (`simulated` has a `steps` list and a `summary` object; `compare` is an
object or null) and stores both as they are, so every reader (the Perfetto trace, the UI's step
pane, the accuracy report, `cascade compare`) takes from it only what it can use, through these:
a number is a finite one within its bound, a list of steps holds objects, an object is a dict.
Anything else is left out, never an error. Pure: the standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

# A step longer than a day, or an error beyond a billion percent, is not drawn or compared: past
# these the readers' arithmetic overflows or prints numbers no one can read.
MAX_STEP_NS = 86_400e9
MAX_ERROR_PCT = 1e9
# The longest step name or kind a reader shows.
MAX_TEXT = 1000


def number(value: Any, low: float = -math.inf, high: float = math.inf) -> float | None:
    """`value` as a finite float within [low, high], else None (text, bools, NaN, Infinity, an
    integer past any float, a number out of bounds)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        result = float(value)
    except OverflowError:
        return None
    return result if math.isfinite(result) and low <= result <= high else None


def duration(value: Any) -> float | None:
    """A step time (ns) a reader can draw: from 0 to MAX_STEP_NS."""
    return number(value, 0.0, MAX_STEP_NS)


def error_pct(value: Any) -> float | None:
    return number(value, -MAX_ERROR_PCT, MAX_ERROR_PCT)


def mapping(doc: Any, key: str) -> dict[str, Any]:
    """`doc[key]` when `doc` is an object and that is one too, else an empty one."""
    value = doc.get(key) if isinstance(doc, Mapping) else None
    return dict(value) if isinstance(value, Mapping) else {}


def items(doc: Any, key: str) -> list[dict[str, Any]]:
    """The objects of the list `doc[key]` (steps, requests), in order; anything else is left out."""
    value = doc.get(key) if isinstance(doc, Mapping) else None
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def index(item: Mapping[str, Any]) -> int | None:
    """A step's `index` when it is an integer (not a bool)."""
    value = item.get("index")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def text(value: Any, default: str) -> str:
    """A name or kind to show: text as it is (cut at MAX_TEXT), else `default`."""
    return value[:MAX_TEXT] if isinstance(value, str) and value else default
