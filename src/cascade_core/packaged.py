"""Data that ships inside the package, found with importlib.resources so that a wheel installed
anywhere (`pip install .`, pipx) has the same samples as a source checkout.

`cascade_core/sample_data` is a symlink to the repository's `samples/` (GPU configs, demo
traces, the sample trace and recordings); building a wheel copies the files it points to.
Pure: it names paths, it reads nothing."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def samples_dir() -> Path:
    """The samples shipped with Cascade (the checkout's `samples/` in an editable install)."""
    return Path(str(files("cascade_core") / "sample_data"))
