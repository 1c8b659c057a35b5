"""The data directory: private to the user running the server, and tidied up at start.

Results, logs and the token's neighbours (S3 credentials, the database) are nobody else's
business on a shared sim host: the directory is 0700 and what the server creates in it 0600/0700
(`cascade serve` also runs with umask 077, which covers what SQLite, rclone, the post-processor
and the workers create). An existing directory from an older install is tightened at start.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from .faults import FULL_DISK_BYTES
from .partial_files import PARTIAL_GLOB
from .settings import Settings

log = logging.getLogger(__name__)

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
PRIVATE_UMASK = 0o077


def private_dir(path: Path) -> Path:
    """`path` and its missing parents created 0700; `path` itself made 0700 if it existed."""
    path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    path.chmod(PRIVATE_DIR)
    return path


def private_file(path: Path, flags: int = os.O_WRONLY | os.O_APPEND) -> int:
    """A file descriptor on `path`, which is created 0600 if it does not exist."""
    return os.open(path, flags | os.O_CREAT, PRIVATE_FILE)


def prepare_data_dir(settings: Settings) -> None:
    """Make the data directory private, create the database file 0600 before SQLite does (SQLite
    gives its WAL and shared-memory files the database file's mode; an existing database is left
    as it is: the private directory already shields it), and remove the partial uploads a killed
    server left behind."""
    private_dir(settings.data_dir)
    if not settings.db_path.exists():
        os.close(private_file(settings.db_path))
    removed = remove_partial_uploads(settings.files_dir)
    if removed:
        log.info("removed %d partial upload(s) left by an interrupted server", removed)
    warn_if_disk_full(settings.data_dir)


def warn_if_disk_full(data_dir: Path) -> None:
    """Say at start that the data directory's disk is full: the server starts all the same and
    serves what it has (reads work; each write answers 507 until space is freed)."""
    try:
        free = shutil.disk_usage(data_dir).free
    except OSError:
        return
    if free < FULL_DISK_BYTES:
        log.warning(
            "the disk of %s is full (%d bytes free): serving what is stored, read-only; "
            "every write answers 507 until space is freed",
            data_dir,
            free,
        )


def remove_partial_uploads(files_dir: Path) -> int:
    """Delete the `.part` files of uploads that never finished (the server was killed during
    the PUT); a finished upload was renamed into place, so none of these is anyone's data."""
    removed = 0
    for partial in files_dir.glob(PARTIAL_GLOB):
        partial.unlink(missing_ok=True)
        removed += 1
    return removed
