"""Plain-text tables for the compare screens, fitted to the terminal's width.

Pure (no Textual): every column has a heading; value columns are as wide as their widest cell or
heading (a number or an id is never cut); the first column (a config or kernel name) gives up
cells first, down to `NAME_MIN`; a table still wider than `width` is left wide for the screen to
scroll sideways. Prose lines are wrapped instead.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from .formatting import ellipsize

GAP = 2  # cells between two columns
NAME_MIN = 12


def table(headings: Sequence[str], rows: Sequence[Sequence[str]], width: int, left: int = 1) -> list[str]:
    """The heading line and one line per row; the first `left` columns are left-aligned, the
    others (values) right-aligned; the first column is shortened (at its end) to fit `width`."""
    widths = [max([len(h)] + [len(row[i]) for row in rows]) for i, h in enumerate(headings)]
    others = sum(widths[1:]) + GAP * (len(widths) - 1)
    widths[0] = min(widths[0], max(NAME_MIN, width - others))

    def line(cells: Sequence[str]) -> str:
        parts = []
        for i, (cell, w) in enumerate(zip(cells, widths)):
            cell = ellipsize(cell, w) if i == 0 else cell
            parts.append(cell.ljust(w) if i < left else cell.rjust(w))
        return (" " * GAP).join(parts).rstrip()

    return [line(headings)] + [line(row) for row in rows]


def prose(text: str, width: int, indent: str = "") -> list[str]:
    """`text` wrapped to `width` (continuation lines indented by `indent`)."""
    return textwrap.wrap(
        text, max(20, width), initial_indent=indent, subsequent_indent=indent + "  ", break_on_hyphens=False
    ) or [""]
