"""Pure rules about a trace's objects: which keys belong to which trace, what counts as a kernel
trace file, and when an upload is complete."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from cascade_core.trace_layout import METADATA_NAME, TRACES_PREFIX

# kernel-1.trace, kernel-1.traceg.xz, kernel-3-ctx_0x55fb3b3820f0.trace.xz, kernel-1.traceg.gz, ...
_KERNEL_FILE = re.compile(r"(kernel-[^/]+?)\.(?:trace|traceg|tracez)(?:\.xz|\.gz)?\Z")


def split_key(key: str) -> tuple[str, str] | None:
    """`accelsim-traces/<trace_id>/<path>` -> (trace_id, path); None for keys that are not a file
    inside a trace (directory markers, objects directly under the prefix)."""
    if not key.startswith(TRACES_PREFIX):
        return None
    trace_id, sep, rel = key[len(TRACES_PREFIX) :].partition("/")
    if not trace_id or not sep or not rel or rel.endswith("/"):
        return None
    return trace_id, rel


def is_safe_relative_path(rel: str) -> bool:
    """True when a path inside a trace stays inside its mirror directory."""
    parts = rel.split("/")
    return all(part not in ("", ".", "..") for part in parts) and "\\" not in rel and "\0" not in rel


def kernel_count(paths: Iterable[str]) -> int:
    """Distinct kernels among a trace's files: `kernel-1.trace` and `kernel-1.traceg` are one."""
    stems = set()
    for path in paths:
        name = path.rsplit("/", 1)[-1]
        if m := _KERNEL_FILE.match(name):
            stems.add(path[: len(path) - len(name)] + m[1])
    return len(stems)


@dataclass(frozen=True)
class PendingFile:
    path: str
    expected_bytes: int
    actual_bytes: int | None  # None: not in the bucket (yet)

    def describe(self) -> str:
        if self.actual_bytes is None:
            return f"{self.path} never arrived (expected {self.expected_bytes} bytes)"
        return f"{self.path} has {self.actual_bytes} of {self.expected_bytes} bytes"


def pending_files(expected: dict[str, int], mirrored: dict[str, int]) -> list[PendingFile]:
    """The files metadata.json lists that are not (yet) mirrored at their listed size, sorted.
    The upload is complete when this is empty."""
    return [
        PendingFile(path, size, mirrored.get(path))
        for path, size in sorted(expected.items())
        if mirrored.get(path) != size
    ]


def missing_metadata_error(waited_s: float) -> str:
    """One line for a prefix whose metadata.json never came (it is what says an upload is done)."""
    return (
        f"upload incomplete after {waited_s:.0f} s without progress: {METADATA_NAME} never arrived "
        "(the uploader writes it last, listing every file)"
    )


def incomplete_upload_error(pending: list[PendingFile], waited_s: float) -> str:
    """One line: the first file that never matched, and how many others."""
    first = pending[0].describe()
    others = f" (and {len(pending) - 1} more listed files)" if len(pending) > 1 else ""
    return f"upload incomplete after {waited_s:.0f} s without progress: {first}{others}"
