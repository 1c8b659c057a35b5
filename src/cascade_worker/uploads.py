"""Which files the simulator wrote, and how each is sent (name, gzip or not). Pure but for reads.

Only files that are new or changed since the simulator started are sent (not the config files
the worker copied in). Text files over `GZIP_OVER` bytes are gzipped and get `.gz` added; files
in subdirectories are sent flat, `dir/name` becoming `dir_name`, as upload names have no `/`.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass
from pathlib import Path

from cascade_core.models import FILE_NAME_PATTERN

GZIP_OVER = 1024 * 1024
MAX_FILE_BYTES = 64 * 1024 * 1024
LOG_NAME = "accelsim.log.gz"

_NAME_OK = re.compile(FILE_NAME_PATTERN)
_BAD_CHARS = re.compile(r"[^A-Za-z0-9._-]")

Snapshot = dict[Path, tuple[int, int]]  # relative path -> (mtime_ns, size)


def snapshot(directory: Path) -> Snapshot:
    files: Snapshot = {}
    for path in directory.rglob("*"):
        if path.is_file() and not path.is_symlink():
            stat = path.stat()
            files[path.relative_to(directory)] = (stat.st_mtime_ns, stat.st_size)
    return files


def written_since(before: Snapshot, after: Snapshot) -> list[Path]:
    """Files that appeared or changed between two snapshots, in name order."""
    return sorted(rel for rel, sig in after.items() if before.get(rel) != sig)


def upload_name(relative: Path, gzipped: bool) -> str | None:
    """A name the server accepts, or None if none can be made."""
    name = _BAD_CHARS.sub("_", "_".join(relative.parts))
    if gzipped:
        name += ".gz"
    if len(name) > 128:
        name = name[-128:]
    return name if _NAME_OK.fullmatch(name) and name != LOG_NAME else None


def looks_like_text(head: bytes) -> bool:
    if b"\0" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut at the end of the sample is still text.
        return exc.start >= len(head) - 3
    return True


@dataclass(frozen=True)
class Upload:
    name: str
    data: bytes


def prepare(directory: Path, relative: Path) -> Upload | None:
    """The bytes to send for one file (gzipped when large text), or None to skip it."""
    data = (directory / relative).read_bytes()
    gzipped = len(data) > GZIP_OVER and not relative.name.endswith(".gz") and looks_like_text(data[:8192])
    if gzipped:
        data = gzip.compress(data, compresslevel=6, mtime=0)
    name = upload_name(relative, gzipped)
    if name is None or len(data) > MAX_FILE_BYTES:
        return None
    return Upload(name, data)


def gzip_file(path: Path) -> bytes:
    """The whole file gzipped (an empty one when it is not there: the log of a sim that printed
    nothing)."""
    data = path.read_bytes() if path.exists() else b""
    return gzip.compress(data, compresslevel=6, mtime=0)
