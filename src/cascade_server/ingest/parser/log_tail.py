"""The last lines of a sim's log, as every sim summary carries them. Pure."""

from __future__ import annotations

TAIL_LINES = 20
# A line of the tail is cut to this many characters (the whole line stays in the log): the tail
# travels in every sim summary.
TAIL_LINE_MAX = 1000


def tail_line(line: str) -> str:
    """The line cut to TAIL_LINE_MAX characters, saying how long it was (a cut line is not cut
    again when a restored parser reads its saved tail)."""
    if len(line) <= TAIL_LINE_MAX:
        return line
    said = f"… ({len(line):,} characters)"
    return line[: TAIL_LINE_MAX - len(said)] + said
