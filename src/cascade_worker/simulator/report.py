"""How `cascade simulator install` shows its progress: a bar redrawn in place on a terminal, and
plain `progress:` lines (one per 5 %) when its output goes to a file, CI or the terminal UI's
install screen, which reads those lines to move its own bar."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TextIO

from .build import bar, elapsed

PROGRESS_LINE = re.compile(r"^progress: (\d+)% \((\d+)/(\d+) objects\) (\S+)$")


def progress_line(fraction: float, done: int, expected: int, seconds: float) -> str:
    return f"progress: {int(fraction * 100)}% ({done}/{expected} objects) {elapsed(seconds)}"


def parse_progress_line(line: str) -> float | None:
    """The fraction a `progress:` line reports, else None (pure; the UI uses it)."""
    match = PROGRESS_LINE.match(line.strip())
    return int(match.group(1)) / 100 if match else None


class Reporter:
    def __init__(self, out: TextIO | None = None, prog: str = "cascade simulator install") -> None:
        self.out = out or sys.stdout
        self.prog = prog
        self.tty = self.out.isatty()
        self._last_step = -1
        self._bar_shown = False
        self._log: Path | None = None

    def _end_bar(self) -> None:
        if self._bar_shown:
            self.out.write("\n")
            self._bar_shown = False

    def step(self, message: str) -> None:
        self._end_bar()
        print(f"{self.prog}: {message}", file=self.out, flush=True)

    def log_path(self, path: Path) -> None:
        self._log = path
        self.step(f"build log: {path}")

    def progress(self, fraction: float, done: int, expected: int, seconds: float) -> None:
        if self.tty:
            self.out.write(f"\r  {bar(fraction)}  {done}/{expected} objects  {elapsed(seconds)}  ")
            self.out.flush()
            self._bar_shown = True
            return
        step = int(fraction * 20)  # every 5 %
        if step != self._last_step:
            self._last_step = step
            print(progress_line(fraction, done, expected, seconds), file=self.out, flush=True)

    def finish(self) -> None:
        self._end_bar()
