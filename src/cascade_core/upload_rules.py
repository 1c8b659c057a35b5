"""What the server accepts of an upload: a usable trace id, and a layout its post-processor can
work on. One rule for the server (the scanner, the post-processor, trace deletion) and `cascade
upload`, which checks a directory with it before sending anything, so it fails at once rather than
after the whole upload. Pure: names in, one-line problems out."""

from __future__ import annotations

import re
from collections.abc import Iterable

from cascade_core.models import FILE_NAME_PATTERN

KERNELSLIST_G = "kernelslist.g"
_TRACE_ID = re.compile(FILE_NAME_PATTERN)


def trace_id_problem(trace_id: str) -> str | None:
    """Why a trace id cannot be used as a directory name, or None when it can."""
    if _TRACE_ID.fullmatch(trace_id):  # fullmatch: `$` alone lets a trailing newline through
        return None
    return f"trace id {trace_id[:80]!r} is not valid: use 1-128 letters, digits, '.', '_' or '-'"


def is_raw_kernelslist(name: str) -> bool:
    """A tracer's kernel list in `traces/` (`kernelslist`, `kernelslist_ctx_0x...`), not yet `.g`."""
    return "kernelslist" in name and not name.endswith(".g") and not name.startswith(".")


def layout_problem(paths: Iterable[str]) -> str | None:
    """What the post-processor refuses in an upload's layout, from its paths inside the trace
    (`traces/kernel-1.trace`, ...; a directory may appear as `traces`), or None."""
    paths = list(paths)
    if not any(path == "traces" or path.startswith("traces/") for path in paths):
        return "the upload has no traces/ directory"
    top = [path[len("traces/") :] for path in paths if path.startswith("traces/") and path.count("/") == 1]
    if KERNELSLIST_G not in top and not any(is_raw_kernelslist(name) for name in top):
        return "the upload has neither traces/kernelslist.g nor a raw traces/kernelslist"
    return None
