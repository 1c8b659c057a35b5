"""Where a trace keeps its timing files (`real_timing.json`, `corrected_timeline.json`,
`kernel_mapping.json`): one rule for the trace's flags, `/comparison` and the worker.

The rule: the path `metadata.json` lists for that file name (the shallowest, when it lists
several), else the trace's root. `cascade timeline import` writes them next to metadata.json, and
`cascade upload` of a tracer's `traces/` folder keeps them under `traces/`."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Any

from ..results import parse_real_timing
from ..timeline import CORRECTED_TIMELINE_NAME, KERNEL_MAPPING_NAME, REAL_TIMING_NAME
from . import METADATA_NAME
from .metadata import MetadataError, relative_key


def listed_path(metadata: dict[str, Any] | None, name: str, trace_id: str) -> str | None:
    """The shallowest path inside the trace that metadata.json's `files` lists for `name`."""
    files = metadata.get("files") if isinstance(metadata, dict) else None
    found = []
    for item in files if isinstance(files, list) else []:
        key = item.get("key") if isinstance(item, dict) else None
        if not isinstance(key, str):
            continue
        try:
            rel = relative_key(key, trace_id)
        except MetadataError:
            continue
        if PurePosixPath(rel).name == name:
            found.append(rel)
    return min(found, key=lambda rel: (rel.count("/"), rel)) if found else None


def read_metadata(trace_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((trace_dir / METADATA_NAME).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def locate(trace_dir: Path, name: str, metadata: dict[str, Any] | None = None) -> Path | None:
    """The trace's `name` file by the rule above, or None when it has none. `metadata` is the
    parsed metadata.json (read from the trace directory when not given)."""
    if metadata is None:
        metadata = read_metadata(trace_dir)
    rel = listed_path(metadata, name, trace_dir.name)
    for path in ([trace_dir / rel] if rel else []) + [trace_dir / name]:
        if path.is_file():
            return path
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
