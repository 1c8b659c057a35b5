"""Where things are in a trace: its keys in the bucket and its timing files on disk.

One rule for the server (the trace's `has_real_timing` / `has_step_timeline`, `/comparison`),
the worker (step timelines) and `cascade timeline import`. The timing files (`real_timing.json`,
`corrected_timeline.json`, `kernel_mapping.json`) are at the path `metadata.json` lists for that
file name (the shallowest, when it lists several), else at the trace's root: `cascade timeline
import` writes them next to metadata.json, and `cascade upload` of a tracer's `traces/` folder
keeps them under `traces/`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path, PurePosixPath
from typing import Any

from cascade_core.bounded_read import METADATA_MAX_BYTES, TIMING_FILE_MAX_BYTES, read_bounded

# Every trace lives under this prefix in the bucket: accelsim-traces/<trace_id>/<path>.
TRACES_PREFIX = "accelsim-traces/"
METADATA_NAME = "metadata.json"
# The timing files a trace directory may hold (next to metadata.json, or where it lists them).
CORRECTED_TIMELINE_NAME = "corrected_timeline.json"
KERNEL_MAPPING_NAME = "kernel_mapping.json"
REAL_TIMING_NAME = "real_timing.json"
# The longest real kernel duration believed (ns): a day. Anything longer, and any value that is not
# a finite number (Infinity, NaN, a bool, a 400-digit integer), is an unknown duration.
MAX_REAL_DURATION_NS = 86_400e9


class MetadataError(ValueError):
    """metadata.json cannot be used; the message is one line."""


def relative_key(key: str, trace_id: str) -> str:
    """A file key from metadata.json as a path inside the trace: full keys
    (`accelsim-traces/<id>/traces/x`) and keys relative to the trace (`traces/x`) both work."""
    own_prefix = f"{TRACES_PREFIX}{trace_id}/"
    if key.startswith(own_prefix):
        return key[len(own_prefix) :]
    if key.startswith(TRACES_PREFIX):
        raise MetadataError(f"metadata.json lists {key!r}, which belongs to another trace")
    return key.lstrip("/")


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


def read_metadata(trace_dir: Path) -> dict[str, Any] | None:
    """The trace directory's parsed metadata.json, or None without a readable one."""
    try:
        data = json.loads(read_bounded(trace_dir / METADATA_NAME, METADATA_MAX_BYTES, decompress=False))
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
    """True when the trace's real timing times at least one kernel: a `real_timing.json` whose
    kernels all lack a usable duration (or that cannot be read) times nothing (`times_a_kernel`)."""
    return times_a_kernel(load_real_timing(trace_dir, metadata))


def times_a_kernel(real: list[tuple[str | None, float | None]] | None) -> bool:
    """Whether real timing (as `load_real_timing` reads it) has a duration for any kernel."""
    return any(duration is not None for _, duration in real or ())


def has_step_timeline(trace_dir: Path | None, metadata: dict[str, Any] | None = None) -> bool:
    return trace_dir is not None and all(
        locate(trace_dir, name, metadata) is not None
        for name in (CORRECTED_TIMELINE_NAME, KERNEL_MAPPING_NAME)
    )


def real_duration(value: Any) -> float | None:
    """A real kernel duration (ns) as `real_timing.json` gives it, or None when it is not a finite,
    non-negative number up to MAX_REAL_DURATION_NS (Infinity, NaN, bools, text, huge integers)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        duration = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    return duration if math.isfinite(duration) and 0 <= duration <= MAX_REAL_DURATION_NS else None


def parse_real_timing(doc: Any) -> list[tuple[str | None, float | None]]:
    """`real_timing.json` -> [(kernel_name, duration_ns)] sorted by kernel id.

    Accepts a list of kernel objects or an object holding one under `kernels`; each kernel has
    `kernel_id` (or `id`), `duration_ns` and optionally `kernel_name`/`name`. A duration that is not
    a sane number (real_duration) is unknown (None), like a missing one; a kernel id that is not a
    finite number is the kernel's position.
    """
    items = doc.get("kernels", []) if isinstance(doc, dict) else doc
    rows = []
    for position, item in enumerate(items if isinstance(items, list) else []):
        if not isinstance(item, dict):
            continue
        kernel_id = item.get("kernel_id", item.get("id", position))
        name = item.get("kernel_name", item.get("name"))
        rows.append(
            (
                kernel_id
                if (isinstance(kernel_id, int) and not isinstance(kernel_id, bool))
                or (isinstance(kernel_id, float) and math.isfinite(kernel_id))
                else position,
                name if isinstance(name, str) else None,
                real_duration(item.get("duration_ns")),
            )
        )
    rows.sort(key=lambda row: row[0])
    return [(name, duration) for _, name, duration in rows]


def load_real_timing(
    trace_dir: Path, metadata: dict[str, Any] | None = None
) -> list[tuple[str | None, float | None]] | None:
    """The trace's real timing as `/comparison` lines it up, or None without (a readable) one."""
    path = locate(trace_dir, REAL_TIMING_NAME, metadata)
    if path is None:
        return None
    try:
        return parse_real_timing(json.loads(read_bounded(path, TIMING_FILE_MAX_BYTES, decompress=False)))
    except (OSError, ValueError, RecursionError):  # TooLargeError too; nesting too deep for json
        return None
