"""The trace's timing files on disk, found by the one rule of `cascade_server.timeline.files`:
the trace's `has_real_timing` / `has_step_timeline` and the real timing `/comparison` reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..results import parse_real_timing
from ..timeline import CORRECTED_TIMELINE_NAME, KERNEL_MAPPING_NAME, REAL_TIMING_NAME
from ..timeline.files import candidates
from . import METADATA_NAME


def read_metadata(trace_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((trace_dir / METADATA_NAME).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def locate(trace_dir: Path, name: str, metadata: dict[str, Any] | None = None) -> Path | None:
    """The trace's `name` file, or None when it has none. `metadata` is the parsed metadata.json
    (read from the trace directory when not given)."""
    if metadata is None:
        metadata = read_metadata(trace_dir)
    for rel in candidates(metadata, name, trace_dir.name):
        if (trace_dir / rel).is_file():
            return trace_dir / rel
    return None


def has_real_timing(trace_dir: Path, metadata: dict[str, Any] | None = None) -> bool:
    return locate(trace_dir, REAL_TIMING_NAME, metadata) is not None


def has_step_timeline(trace_dir: Path, metadata: dict[str, Any] | None = None) -> bool:
    return all(locate(trace_dir, name, metadata) is not None
               for name in (CORRECTED_TIMELINE_NAME, KERNEL_MAPPING_NAME))


def load_real_timing(
    trace_dir: Path, metadata: dict[str, Any] | None = None
) -> list[tuple[str | None, float | None]] | None:
    """The trace's real timing as `/comparison` lines it up, or None without (a readable) one."""
    path = locate(trace_dir, REAL_TIMING_NAME, metadata)
    if path is None:
        return None
    try:
        return parse_real_timing(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None
