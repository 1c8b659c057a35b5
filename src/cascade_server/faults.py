"""Recognising a full disk, whichever layer noticed it. Pure.

A write that finds no space fails as `OSError(ENOSPC)` (an uploaded file, a trace) or as SQLite's
SQLITE_FULL (the database); either way nothing was stored (the file is removed, the transaction
rolled back), and the same request succeeds once space is freed, so the API answers 507 and
workers retry.
"""

from __future__ import annotations

import errno
import sqlite3

DISK_FULL_STATUS = 507
# Less free space than this is a full disk for all a server can write (at start, and for the
# database opened read-only on one).
FULL_DISK_BYTES = 1024 * 1024
DISK_FULL_DETAIL = "the server's disk is full: nothing was stored; retry once space is freed"


def is_disk_full(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        return code is not None and code & 0xFF == sqlite3.SQLITE_FULL
    return False


def is_corrupt_database(exc: BaseException) -> bool:
    """SQLite found the database file damaged, or not a database at all."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
