"""Column widths for the list tables from the terminal width and what the cells hold.

Pure (no Textual): the most useful columns are kept first when the terminal is narrow (each
column's `min` is its share of the budget; one whose cells are narrower gives the rest back),
each kept column grows towards
its content up to its `max`, then past its `max` while there is room (a long model name is cut only
when the width is short), and what is left goes to the last (free-text) column. A cell wider than
its column is cut with `…` (`formatting.ellipsize`, by the list screen), never silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

CELL_PADDING = 2  # DataTable pads every cell by one on each side


@dataclass(frozen=True)
class ColumnSpec:
    title: str
    min: int  # narrower than this the column is dropped instead
    max: int  # grows past this only with cells to spare once every column has its max (0: no limit)
    priority: int  # lower is kept first when the terminal is narrow


def fit(
    specs: Sequence[ColumnSpec], rows: Sequence[Sequence[str]], width: int, padding: int = CELL_PADDING
) -> list[int | None]:
    """The width of each column (None: dropped) so the kept ones fill `width` cells."""
    natural = [
        max([len(spec.title)] + [len(row[i]) for row in rows if i < len(row)]) for i, spec in enumerate(specs)
    ]
    # Which columns are kept is decided on their `min`s (the budget the specs are designed to),
    # so a less useful column never takes cells a more useful one was promised; how wide each
    # kept one starts is decided on its cells (`3/3` needs 3, not the 5 `12/64` would).
    order = sorted(range(len(specs)), key=lambda i: (specs[i].priority, i))
    kept: list[int] = []
    used = 0
    for i in order:
        need = specs[i].min + padding
        if used + need <= width or not kept:
            kept.append(i)
            used += need
    widths = {i: min(specs[i].min, natural[i]) for i in kept}
    spare = width - sum(widths.values()) - padding * len(kept)
    capped = {i: min(natural[i], specs[i].max) if specs[i].max else natural[i] for i in kept}
    # Cheapest first: a state or an age a few cells short is made whole before a long name
    # takes the rest; first up to each column's max, then past it.
    for goal in (capped, {i: natural[i] for i in kept}):
        for i in sorted(kept, key=lambda i: goal[i] - widths[i]):
            grow = max(0, min(spare, goal[i] - widths[i]))
            widths[i] += grow
            spare -= grow
    if spare > 0:
        widths[max(kept)] += spare  # the free-text column at the right end takes the rest
    return [widths.get(i) for i in range(len(specs))]
