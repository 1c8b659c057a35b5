"""Reading untrusted files within a stated memory bound: one helper for every reader of a trace,
a profile or a metadata file, compressed or not.

Whatever a file claims, a reader never holds more than the bound it passes: a whole file is read
only up to `max_bytes` (a plain file is refused from its size, before any read; a `.gz`/`.xz` one
as soon as it has expanded past the bound), and lines are read one at a time, each at most
`max_line` bytes (a 1 GiB line of NULs fails at its first megabyte, not at its end).

Pure of any server state: the worker, the UI's commands and the server all use it.
"""

from __future__ import annotations

import gzip
import io
import lzma
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

MiB = 1024 * 1024
# No line of a trace, a kernel list or a stats file comes near this (real ones are under 1 KB).
MAX_LINE_BYTES = 1 * MiB
# Whole files, by kind (each is parsed whole, so its parse costs a few times this in memory):
METADATA_MAX_BYTES = 4 * MiB  # a trace's metadata.json (the list of 20,000 files fits in 2 MiB)
PROFILE_MAX_BYTES = 256 * MiB  # a PyTorch profile, decompressed (real ones are tens of MB)
TIMING_FILE_MAX_BYTES = 256 * MiB  # real_timing.json and the step-timeline files made from one

# What a corrupt compressed stream raises while it is read.
DECOMPRESS_ERRORS = (OSError, EOFError, lzma.LZMAError, zlib.error)


class TooLargeError(ValueError):
    """A file, its expansion or one of its lines passes the reader's bound; the message is one
    line naming the file (`what`) and the bound."""


def describe_bytes(n: int) -> str:
    if n >= MiB and n % MiB == 0:
        return f"{n // MiB} MiB"
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024} KiB"
    return f"{n} bytes"


class _Capped(io.RawIOBase):
    """A stream that raises TooLargeError once more than `limit` bytes came out of it (checked as
    they come, so no more than one read's worth past the limit is ever held)."""

    def __init__(self, stream: Any, limit: int, what: str) -> None:
        self.stream = stream
        self.limit = limit
        self.what = what
        self.seen = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.stream.read(min(len(buffer), self.limit + 1 - self.seen) or 1)
        n = len(data)
        buffer[:n] = data
        self.seen += n
        if self.seen > self.limit:
            raise TooLargeError(f"{self.what} expands to more than {describe_bytes(self.limit)}")
        return n

    def close(self) -> None:
        self.stream.close()
        super().close()


def is_compressed(name: str) -> bool:
    return name.endswith((".gz", ".xz"))


def open_bounded(path: Path, max_bytes: int, what: str | None = None, decompress: bool = True) -> IO[bytes]:
    """The bytes of `path`, decompressed when its name ends in `.gz` or `.xz` (and `decompress`),
    raising TooLargeError past `max_bytes` (a plain file bigger than that is refused at once)."""
    what = what or path.name
    raw: Any
    if decompress and path.name.endswith(".xz"):
        raw = lzma.open(path, "rb")
    elif decompress and path.name.endswith(".gz"):
        raw = gzip.open(path, "rb")
    else:
        if path.stat().st_size > max_bytes:
            raise TooLargeError(f"{what} is larger than {describe_bytes(max_bytes)}")
        raw = open(path, "rb")
    return io.BufferedReader(_Capped(raw, max_bytes, what), 1 << 16)


def read_bounded(path: Path, max_bytes: int, what: str | None = None, decompress: bool = True) -> bytes:
    """All of `path` (decompressed as `open_bounded`), at most `max_bytes`."""
    with open_bounded(path, max_bytes, what, decompress) as f:
        return f.read()


def decompress_bounded(data: bytes, max_bytes: int, what: str) -> bytes:
    """`data` gunzipped (when it starts with gzip's magic) or as it is, at most `max_bytes`."""
    if data[:2] != b"\x1f\x8b":
        if len(data) > max_bytes:
            raise TooLargeError(f"{what} is larger than {describe_bytes(max_bytes)}")
        return data
    with io.BufferedReader(_Capped(gzip.GzipFile(fileobj=io.BytesIO(data)), max_bytes, what)) as f:
        return f.read()


def bounded_lines(stream: IO[bytes], what: str, max_line: int = MAX_LINE_BYTES) -> Iterator[bytes]:
    """The lines of a binary stream, newline kept, each at most `max_line` bytes: a longer one
    raises TooLargeError naming its line number."""
    number = 0
    while line := stream.readline(max_line + 1):
        number += 1
        if len(line) > max_line:
            raise TooLargeError(f"{what} line {number} is longer than {describe_bytes(max_line)}")
        yield line


def bounded_text_lines(
    stream: IO[bytes], what: str, max_line: int = MAX_LINE_BYTES, errors: str = "strict"
) -> Iterator[str]:
    """`bounded_lines` decoded as UTF-8 (`errors` as `bytes.decode`)."""
    for line in bounded_lines(stream, what, max_line):
        yield line.decode("utf-8", errors)
