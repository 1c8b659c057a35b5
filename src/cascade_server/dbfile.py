"""Is the database file one SQLite can open as it is? Checked before anything opens it.

SQLite takes a foreign or cut-off file for a database and fails later, deep in a query (or, for
an empty file, starts a new database in it). A server that finds its database broken must stop
at once with one line naming the file and what to do, and never write to it: only the header
(the first 100 bytes) and the size are read. See https://www.sqlite.org/fileformat.html, 1.3.
"""

from __future__ import annotations

import os
from pathlib import Path

MAGIC = b"SQLite format 3\x00"
HEADER_BYTES = 100


def header_problem(header: bytes, size: int, wal_bytes: int = 0) -> str | None:
    """What is wrong with a database file of `size` bytes starting with `header`, or None.
    An empty file is a new database. With `wal_bytes` in its write-ahead log, the file may be
    shorter than its header says: a checkpoint the disk filled during extends it only partly,
    and the log still holds every page (SQLite reads them from there), so only the header is
    checked then. Pure."""
    if size == 0:
        return None
    if header[: len(MAGIC)] != MAGIC:
        return "is not an SQLite database (its first bytes are not SQLite's header)"
    if size < HEADER_BYTES:
        return f"is truncated ({size} bytes, less than SQLite's {HEADER_BYTES}-byte header)"
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        return f"has a corrupt header (page size {page_size})"
    if wal_bytes:
        return None
    if size % page_size:
        return f"is truncated ({size} bytes, not a whole number of {page_size}-byte pages)"
    change_counter, valid_for = header[24:28], header[92:96]
    pages = int.from_bytes(header[28:32], "big")
    # The header's page count is only meaningful when written by SQLite 3.7.0 or later, which
    # then stores the change counter a second time at offset 92.
    if pages and change_counter == valid_for and size < pages * page_size:
        return f"is truncated ({size} bytes; its header says {pages * page_size})"
    return None


def database_problem(path: Path) -> str | None:
    """`header_problem` of the file at `path`; None when there is no file yet."""
    try:
        with open(path, "rb") as db:
            size = os.fstat(db.fileno()).st_size
            header = db.read(HEADER_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    try:
        wal_bytes = path.with_name(path.name + "-wal").stat().st_size
    except OSError:
        wal_bytes = 0
    return header_problem(header, size, wal_bytes)


def corrupt_database_message(path: Path, problem: str) -> str:
    return (
        f"the database {path} {problem}. Cascade left it untouched: restore it from a backup, "
        f"or move it aside (with any {path.name}-wal and {path.name}-shm beside it) to start "
        "with an empty database"
    )
