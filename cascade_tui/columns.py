"""Column widths for the list tables from the terminal width and what the cells hold.

Pure (no Textual): the most useful columns are kept first when the terminal is narrow, each kept
column grows towards its content, and what is left goes to the last (free-text) column, so an
80-column terminal keeps the error of a failed trace and a 120-column one cuts nothing it can show.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

CELL_PADDING = 2  # DataTable pads every cell by one on each side


@dataclass(frozen=True)
class ColumnSpec:
    title: str
    min: int  # narrower than this the column is dropped instead
    max: int  # content wider than this is cut (0: no limit)
    priority: int  # lower is kept first when the terminal is narrow


def fit(
    specs: Sequence[ColumnSpec], rows: Sequence[Sequence[str]], width: int, padding: int = CELL_PADDING
) -> list[int | None]:
    """The width of each column (None: dropped) so the kept ones fill `width` cells."""
    order = sorted(range(len(specs)), key=lambda i: (specs[i].priority, i))
    kept: list[int] = []
    used = 0
    for i in order:
        need = specs[i].min + padding
        if used + need <= width or not kept:
            kept.append(i)
            used += need
    widths = {i: specs[i].min for i in kept}
    spare = width - used
    natural = {}
    for i in kept:
        natural[i] = max([len(specs[i].title)] + [len(row[i]) for row in rows if i < len(row)])
        if specs[i].max:
            natural[i] = min(natural[i], specs[i].max)
    # Cheapest first: a state or an age a few cells short is made whole before a long name
    # takes the rest.
    for i in sorted(kept, key=lambda i: natural[i] - widths[i]):
        grow = max(0, min(spare, natural[i] - widths[i]))
        widths[i] += grow
        spare -= grow
    if spare > 0:
        widths[max(kept)] += spare  # the free-text column at the right end takes the rest
    return [widths.get(i) for i in range(len(specs))]
