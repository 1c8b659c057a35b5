"""JSON bodies the API writes with `json.dumps` (not through a model): never a bare `NaN` or
`Infinity`, which `json.dumps` writes by default and no JSON parser but Python's reads (the
Perfetto trace was refused by ui.perfetto.dev for one). A number that is not finite is sent as
null, and logged: it means a bound was missed upstream. (Models write theirs as the strings
"NaN", "Infinity", "-Infinity": cascade_core/models/common.py.)"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

log = logging.getLogger(__name__)


def dumps(obj: Any) -> bytes:
    try:
        return json.dumps(obj, allow_nan=False).encode()
    except ValueError:
        log.warning("a response held a number that is not finite; it is sent as null")
        return json.dumps(finite(obj), allow_nan=False).encode()


def finite(obj: Any) -> Any:
    """`obj` with every float that is not finite replaced by None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {key: finite(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(value) for value in obj]
    return obj
