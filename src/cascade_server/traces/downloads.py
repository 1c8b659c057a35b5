"""Where the scanner downloads an object before renaming it into the trace's mirror.

Not beside the file it becomes: a bucket key may be any name, so no temporary name beside it is
one an upload cannot take (an object `traces/.a.part` next to `traces/a` would be overwritten by
`a`'s download). Downloads go to `DATA_DIR/traces/~downloads/`: on the mirror's filesystem (the
rename stays atomic), in no trace's directory (`~` is in no trace id); what a killed server left
there is removed at start."""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path

from ..datadir import private_dir
from ..partial_files import TRACE_TEMP_DIR_NAME
from ..settings import Settings

DOWNLOADS_NAME = TRACE_TEMP_DIR_NAME


def downloads_dir(settings: Settings) -> Path:
    return settings.traces_dir / DOWNLOADS_NAME


def download_path(settings: Settings, trace_id: str) -> Path:
    """A fresh temporary file name for one object of `trace_id` (blocking: makes the directory)."""
    return private_dir(downloads_dir(settings)) / f"{trace_id}.{secrets.token_hex(8)}.part"


def clear_downloads(settings: Settings) -> None:
    """Remove the downloads a killed server left unfinished (blocking)."""
    shutil.rmtree(downloads_dir(settings), ignore_errors=True)
