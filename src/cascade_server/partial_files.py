"""The names of files still being written into the files directory (a sim's upload, a seeded
sample file), renamed into place when complete.

A temporary name must be one no stored file can have, or the cleanup at start (which removes
every temporary file a killed server left) would delete a finished file with that name: a sim may
upload `.x.part`. Accepted names (`FILE_NAME_PATTERN`) hold only letters, digits, '.', '_' and '-',
so every temporary name starts with `~`, which none of them can."""

from __future__ import annotations

import secrets
from pathlib import Path

PARTIAL_PREFIX = "~"
# Relative to the files directory: `<sim id>/~<name>.<8 hex>.part`.
PARTIAL_GLOB = f"*/{PARTIAL_PREFIX}*.part"


# Under the trace mirror (`DATA_DIR/traces/`): where objects are downloaded and the post-processor
# writes, before each file is renamed into a trace's directory. A bucket key may take any name,
# so no temporary name beside a trace's files is safe; no trace id holds `~`, so this directory is
# in no trace's.
TRACE_TEMP_DIR_NAME = "~downloads"


def partial_path(directory: Path, name: str) -> Path:
    """Where `name` is written before it is renamed into `directory / name`."""
    return directory / f"{PARTIAL_PREFIX}{name}.{secrets.token_hex(4)}.part"
