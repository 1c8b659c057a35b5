"""The log pane's data: a bounded line store with search, and lining up a fetched log tail with
live chunks that arrived while it was being fetched. Pure, no Textual.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_CONTROL = re.compile("[\u0000-\u0008\u000b-\u001f\u007f]")


def clean_line(line: str) -> str:
    """Tabs expanded and control characters (ANSI escapes included) made harmless for the screen."""
    if "\t" in line:
        line = line.expandtabs()
    return _CONTROL.sub("�", line) if _CONTROL.search(line) else line


class LineStore:
    """The last `max_lines` lines of a log, with how many older lines were dropped.

    Dropping is done in blocks (a tenth of the capacity) so appending stays amortised O(1) even
    at the cap, instead of shifting the whole list on every batch.
    """

    def __init__(self, max_lines: int = 200_000) -> None:
        if max_lines < 10:
            raise ValueError("max_lines must be at least 10")
        self.max_lines = max_lines
        self.lines: list[str] = []
        self.dropped = 0  # lines dropped from the front since the last clear
        self.total = 0  # lines ever appended since the last clear

    def __len__(self) -> int:
        return len(self.lines)

    def clear(self) -> None:
        self.lines = []
        self.dropped = 0
        self.total = 0

    def extend(self, lines: Iterable[str]) -> int:
        """Append lines; return how many were dropped from the front to stay within the cap."""
        before = len(self.lines)
        self.lines.extend(clean_line(line) for line in lines)
        self.total += len(self.lines) - before
        overflow = len(self.lines) - self.max_lines
        if overflow <= 0:
            return 0
        cut = max(overflow, self.max_lines // 10)
        cut = min(cut, len(self.lines))
        del self.lines[:cut]
        self.dropped += cut
        return cut

    def find(self, pattern: re.Pattern[str], start: int, backwards: bool = False) -> int | None:
        """Index of the next line matching `pattern` from `start` (exclusive), wrapping around."""
        n = len(self.lines)
        if n == 0:
            return None
        order: Iterable[int]
        if backwards:
            order = list(range(start - 1, -1, -1)) + list(range(n - 1, start - 1, -1))
        else:
            order = list(range(start + 1, n)) + list(range(0, min(start + 1, n)))
        search = pattern.search
        lines = self.lines
        for i in order:
            if search(lines[i]):
                return i
        return None

    def count(self, pattern: re.Pattern[str], upto: int | None = None) -> int:
        """Lines matching `pattern` (only up to and including index `upto`, when given)."""
        search = pattern.search
        lines = self.lines if upto is None else self.lines[: upto + 1]
        return sum(1 for line in lines if search(line))


def compile_search(text: str) -> re.Pattern[str]:
    """Operators type plain text or a regex; an invalid regex is searched for literally, and
    lower-case text matches case-insensitively (smart case, as in less and vim)."""
    flags = 0 if any(c.isupper() for c in text) else re.IGNORECASE
    try:
        return re.compile(text, flags)
    except re.error:
        return re.compile(re.escape(text), flags)


def merge_live(fetched: Sequence[str], live_chunks: Sequence[Sequence[str]]) -> list[str]:
    """The lines of `live_chunks` that a freshly fetched log tail does not already end with.

    Chunks were collected from the event stream since just before the fetch started; the ones the
    server committed before it served the fetch are at the end of `fetched`, the rest are new.
    Those are always a prefix of `live_chunks`, so find the longest prefix that `fetched` ends with.
    """
    for k in range(len(live_chunks), 0, -1):
        joined = [line for chunk in live_chunks[:k] for line in chunk]
        if len(joined) <= len(fetched) and list(fetched[len(fetched) - len(joined) :]) == joined:
            return [line for chunk in live_chunks[k:] for line in chunk]
    return [line for chunk in live_chunks for line in chunk]


def wrapped_window(
    lines: Sequence[str], top: int, width: int, height: int, at_end: bool
) -> list[tuple[int, int]]:
    """The rows a wrapping log view shows: (line index, offset of the piece) for each of `height`
    rows, from line `top` down, or (`at_end`: following) the last lines' pieces, bottom-aligned so
    the newest line is always whole on screen. Only the visible lines are measured."""
    width = max(1, width)

    def pieces(index: int) -> list[tuple[int, int]]:
        count = max(1, -(-len(lines[index]) // width))
        return [(index, k * width) for k in range(count)]

    rows: list[tuple[int, int]] = []
    if at_end:
        index = len(lines) - 1
        while index >= 0 and len(rows) < height:
            rows = pieces(index) + rows
            index -= 1
        return rows[-height:] if height > 0 else []
    index = max(0, top)
    while index < len(lines) and len(rows) < height:
        rows.extend(pieces(index))
        index += 1
    return rows[: max(0, height)]
