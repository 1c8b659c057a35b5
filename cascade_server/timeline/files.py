"""Where a trace keeps its timing files (`real_timing.json`, `corrected_timeline.json`,
`kernel_mapping.json`): one rule for the trace's flags, `/comparison` and the worker.

The rule: the path `metadata.json` lists for that file name (the shallowest, when it lists
several), else the trace's root. `cascade timeline import` writes them next to metadata.json, and
`cascade upload` of a tracer's `traces/` folder keeps them under `traces/`. Pure: the callers
check which candidate exists."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from ..traces.metadata import MetadataError, relative_key


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


def candidates(metadata: dict[str, Any] | None, name: str, trace_id: str) -> list[str]:
    """Paths inside the trace to try for `name`, in order: the first that exists is the file."""
    listed = listed_path(metadata, name, trace_id)
    return [listed, name] if listed and listed != name else [name]
