"""Records as text: an aligned plain-text table for people, JSON and CSV for scripts.

A record is a flat dict of raw values (numbers stay numbers). JSON and CSV carry them exactly
(a float's `repr` round-trips), so `--format csv` reads back to the same values; only the table
formats them for reading. Pure: no I/O.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cascade_core.cli_usage import spelled_out as printable  # one spelling for every command

FORMATS = ("table", "json", "csv")

Record = dict[str, Any]


@dataclass(frozen=True)
class Column:
    key: str  # the record's key, and the JSON / CSV field name
    header: str  # the table's column title
    text: Callable[[Any], str] = str  # how the table shows a value (None is always "-")
    right: bool = False  # numbers align right
    in_table: bool = True  # False: JSON and CSV only (ids and raw names a person need not read)
    when_any: bool = False  # True: in the table only when some record has a value (a rare note)


def has_value(value: Any) -> bool:
    """What a `when_any` column shows for: a number, zero too (`estimated from #0`), or
    anything not empty."""
    return bool(value) or (isinstance(value, int | float) and not isinstance(value, bool))


def cell(column: Column, value: Any) -> str:
    return "-" if value is None or value == "" else printable(column.text(value))


def render_table(columns: Sequence[Column], records: Sequence[Record]) -> str:
    """Columns two spaces apart, each as wide as its widest cell, headers first; no trailing
    spaces, so the output diffs and greps cleanly."""
    columns = [
        c for c in columns if c.in_table and (not c.when_any or any(has_value(r.get(c.key)) for r in records))
    ]
    rows = [[c.header for c in columns]] + [[cell(c, r.get(c.key)) for c in columns] for r in records]
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    lines = []
    for row in rows:
        parts = [
            text.rjust(width) if column.right else text.ljust(width)
            for column, text, width in zip(columns, row, widths)
        ]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def _finite(value: Any) -> Any:
    """NaN and infinities as the API sends them ("NaN", "Infinity", "-Infinity"): JSON has no
    literal for them, and a strict parser refuses Python's `NaN`."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def render_json(records: Any) -> str:
    return json.dumps(_finite(records), indent=2, ensure_ascii=False, allow_nan=False)


def render_csv(fields: Sequence[str], records: Sequence[Record]) -> str:
    """A header row, then one row per record; None is an empty field, a list its items joined
    with `;`."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(fields), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for record in records:
        writer.writerow({k: _csv_field(v) for k, v in record.items()})
    return buffer.getvalue().rstrip("\n")


def _csv_field(value: Any) -> Any:
    if value is None:
        return ""
    return ";".join(map(str, value)) if isinstance(value, list) else value


def render(fmt: str, columns: Sequence[Column], records: Sequence[Record]) -> str:
    if fmt == "json":
        return render_json(list(records))
    if fmt == "csv":
        return render_csv([c.key for c in columns], records)
    return render_table(columns, records)
