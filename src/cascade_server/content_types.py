"""The Content-Type a sim's file is stored with and served as, from its name (pure)."""

from __future__ import annotations

import mimetypes
import os

# What Accel-Sim runs and the worker produce, fixed so they do not depend on the host's mime.types.
CONTENT_TYPES = {
    ".csv": "text/csv",
    ".txt": "text/plain",
    ".log": "text/plain",
    ".json": "application/json",
    ".gz": "application/gzip",
}


def content_type_for(name: str) -> str:
    suffix = os.path.splitext(name)[1].lower()
    if suffix in CONTENT_TYPES:
        return CONTENT_TYPES[suffix]
    guessed, _ = mimetypes.guess_type(name, strict=False)
    return guessed or "application/octet-stream"
