"""Finding the `cascade tui` processes the web UI started for browser tabs."""

from __future__ import annotations

import os
from pathlib import Path


def ui_processes() -> list[int]:
    """`cascade tui` processes this test process started (through the server in it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid() and b"cascade_tui.cli" in cmdline and b"tui" in cmdline:
            found.append(int(entry.name))
    return found
