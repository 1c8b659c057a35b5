"""Simulator output -> log lines -> numbered chunks. Pure: no I/O, the caller passes the time.

The server stores a sim's log as its chunks' lines joined with "\\n" plus a final "\\n", so lines
are split on "\\n" only (never on "\\r" or other separators) to give the log back byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cascade_core.models import LogChunk

# Flush a chunk once its oldest line is this old, or once it holds this many lines or bytes
# (the byte cap keeps one request well under the server's JSON body limit).
FLUSH_SECONDS = 0.5
FLUSH_LINES = 1000
FLUSH_BYTES = 512 * 1024


# A line longer than this is cut there (the rest of it, to its newline, is left out): output
# without newlines would otherwise grow the partial line, and one chunk, without bound. Real lines
# are under a few KB (the longest are templated kernel names).
MAX_LINE_BYTES = 64 * 1024


class LineSplitter:
    """Bytes as they come from a pipe -> complete lines, holding back a partial last line."""

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self._partial = b""
        self._max = max_line
        self._cutting = False  # a line was cut: the rest of it, up to its newline, is left out

    def feed(self, data: bytes) -> list[str]:
        parts = (self._partial + data).split(b"\n")
        self._partial = parts.pop()
        lines = []
        for part in parts:
            if self._cutting:  # the end of a line already cut
                self._cutting = False
                continue
            lines.append(self._line(part))
        if len(self._partial) > self._max and not self._cutting:
            lines.append(self._line(self._partial))
            self._cutting = True
        if self._cutting:
            self._partial = b""
        return lines

    def finish(self) -> list[str]:
        """The last line when the output did not end with a newline."""
        rest, self._partial = self._partial, b""
        return [self._line(rest)] if rest and not self._cutting else []

    def _line(self, raw: bytes) -> str:
        if len(raw) <= self._max:
            return _decode(raw)
        return _decode(raw[: self._max]) + f" [cascade: line cut at {self._max:,} bytes]"


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


@dataclass
class Chunker:
    """Collects lines and cuts `LogChunk`s with `seq` from `first_seq`, by age, count and size."""

    max_age: float = FLUSH_SECONDS
    max_lines: int = FLUSH_LINES
    max_bytes: int = FLUSH_BYTES
    next_seq: int = 0
    _lines: list[str] = field(default_factory=list)
    _bytes: int = 0
    _started: float | None = None

    def add(self, lines: list[str], now: float) -> list[LogChunk]:
        """Add lines; returns the chunks that became full (the rest waits for `due`/`flush`)."""
        full: list[LogChunk] = []
        for line in lines:
            if self._started is None:
                self._started = now
            self._lines.append(line)
            self._bytes += len(line) + 1
            if len(self._lines) >= self.max_lines or self._bytes >= self.max_bytes:
                full.append(self._cut())
        return full

    def due(self, now: float) -> LogChunk | None:
        """The pending lines as a chunk if the oldest has waited `max_age`, else None."""
        if self._started is not None and now - self._started >= self.max_age:
            return self._cut()
        return None

    def flush(self) -> LogChunk | None:
        """Whatever is pending, now (at the end of the output)."""
        return self._cut() if self._lines else None

    def seconds_until_due(self, now: float) -> float | None:
        if self._started is None:
            return None
        return max(0.0, self.max_age - (now - self._started))

    def _cut(self) -> LogChunk:
        chunk = LogChunk(seq=self.next_seq, lines=self._lines)
        self.next_seq += 1
        self._lines, self._bytes, self._started = [], 0, None
        return chunk
