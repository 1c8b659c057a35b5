"""A sim's log within its limit: what is kept once the log has passed it. Pure: text in, text out.

Options change how much a simulator prints: `-gpgpu_runtime_stat 1:15` printed 818 MB in two
minutes, all periodic statistics. So the worker (its local copy and its chunks) and the server
(what it stores) each give a sim's log a limit. Up to it every line is kept. Past it the log keeps
what the sim's results and its failure are read from, and leaves out the rest:

- stats blocks, `kernel_name = ` through `gpgpu_silicon_slowdown = ` (a "block" longer than
  MAX_BLOCK_CHARS is none: real ones are 100-300 KB);
- launch lines (`Processing kernel `, `launching kernel name: `) and the exit line;
- Cascade's own lines (`[cascade] `, cascade_core.log_notes): the worker's notes place kernels;
- up to MAX_FAILURE_LINES lines that say why a simulator failed (an assertion, an error, a deadlock
  report, `std::bad_alloc`).

Where the first line is left out, one line of Cascade's says so (`note`); the counts of what was
left out are kept for the sim's error. The kept lines count toward the limit too, so a log is its
limit plus its kernels (which the trace bounds), plus a chunk at most.

Sizes are characters of text, newlines included (bytes, for the ASCII a simulator prints). A
chunk that fits whole is passed through without looking at its lines (two `rfind`s keep track of
whether it ends inside a stats block); only past the limit is a chunk read line by line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cascade_core import log_notes

BLOCK_START = "kernel_name = "
BLOCK_END = "gpgpu_silicon_slowdown = "
MAX_BLOCK_CHARS = 4 * 1024 * 1024
MAX_FAILURE_LINES = 200
_LAUNCH = ("Processing kernel ", "launching kernel name: ", "GPGPU-Sim: *** exit detected ***")
_FAILURE = re.compile(
    r"Assertion|ERROR|[Dd]eadlock|DEADLOCK|terminate called|what\(\):|bad_alloc|Segmentation fault|Aborted"
)


@dataclass
class LogBudget:
    """One sim's log. `limit`: characters kept before only the lines above are (0: no limit);
    `note`: the line said where the first line is left out; `notes_trusted`: lines that start
    like Cascade's own are its own (the server cannot tell; the worker knows the simulator's output
    from its notes, and gives its notes with `own=True`)."""

    limit: int
    note: str
    notes_trusted: bool = True
    used: int = 0
    over: bool = False  # the limit is passed: only the lines above are kept
    in_block: bool = False
    block_chars: int = 0
    dropped_lines: int = 0
    dropped_chars: int = 0
    failure_lines: int = 0
    _last_kept: bool = False  # whether the last line read was kept

    def admit(self, text: str, own: bool = False) -> str:
        """The part of `text` (a chunk's text: lines, each ending in a newline) the log keeps.
        `own`: lines of Cascade's own, always kept."""
        if self._fits(text):
            return text
        lines = text.split("\n")
        whole = not lines[-1]  # every line ends in a newline (a last line without one is a line too)
        if whole:
            lines.pop()
        kept = "".join(line + "\n" for line in self._filter(lines, own))
        return kept if whole or not self._last_kept else kept[:-1]

    def admit_lines(self, lines: list[str], own: bool = False) -> list[str]:
        """`admit` for lines without their newlines (the worker's form)."""
        if not lines or self._fits("\n".join(lines) + "\n"):
            return lines
        return self._filter(lines, own)

    def _fits(self, text: str) -> bool:
        """Whether `text` is kept whole without reading its lines (and counted if so)."""
        if self.over or (self.limit > 0 and self.used + len(text) > self.limit):
            return False
        self._follow_blocks(text)
        self.used += len(text)
        return True

    def _filter(self, lines: list[str], own: bool) -> list[str]:
        kept: list[str] = []
        for line in lines:
            first_left_out = not self.dropped_lines
            self._last_kept = self._keep(line, own)
            if self._last_kept:
                kept.append(line)
            elif first_left_out:  # said once, where the first line is left out
                kept.append(self.note)
                self.used += len(self.note) + 1
        return kept

    def summary(self) -> str | None:
        """How much was left out, for the sim's log and error; None when nothing was."""
        if not self.dropped_lines:
            return None
        return (
            f"{self.dropped_lines:,} lines ({self.dropped_chars / 2**20:,.1f} MiB) of the simulator's "
            f"output left out past the log limit of {self.limit / 2**20:,.0f} MiB"
        )

    def _follow_blocks(self, text: str) -> None:
        """Whether `text` (kept whole) leaves the log inside a stats block, and how long it is."""
        text = "\n" + text
        start, end = text.rfind("\n" + BLOCK_START), text.rfind("\n" + BLOCK_END)
        if start > end:
            self.in_block, self.block_chars = True, len(text) - start
        elif end > start:
            self.in_block, self.block_chars = False, 0
        elif self.in_block:
            self.block_chars += len(text) - 1

    def _keep(self, line: str, own: bool) -> bool:
        """One line, in order: whether it is kept (and the counts that follow)."""
        size = len(line) + 1
        essential = own or self._essential(line, size)
        if not self.over and (self.limit <= 0 or self.used + size <= self.limit):
            self.used += size
            return True
        self.over = True
        if essential:
            self.used += size
            return True
        self.dropped_lines += 1
        self.dropped_chars += size
        return False

    def _essential(self, line: str, size: int) -> bool:
        if line.startswith(BLOCK_START):
            self.in_block, self.block_chars = True, size
            return True
        if self.in_block:
            self.block_chars += size
            if line.startswith(BLOCK_END):
                self.in_block, self.block_chars = False, 0
                return True
            return self.block_chars <= MAX_BLOCK_CHARS
        if line.startswith(_LAUNCH) or (self.notes_trusted and line.startswith(log_notes.PREFIX)):
            return True
        if self.failure_lines < MAX_FAILURE_LINES and _FAILURE.search(line):
            self.failure_lines += 1
            return True
        return False
