"""A kernel's stats lines as numbers, for scripts (`cascade results --stats`): the API keeps each
`key = value` line Accel-Sim prints as it is, and about one key in ten holds text, most of them
several numbers on one line. Here each becomes numeric fields, named so (docs/guides/cli.md,
"Stats as numbers"):

- `L1D_cache_core[0]: Access = 196, Miss = 193, Miss_rate = 0.985, ...`: one field per pair,
  `L1D_cache_core[0].Access` 196, `L1D_cache_core[0].Miss` 193, `L1D_cache_core[0].Miss_rate`
  0.985, ... (`-nan` is NaN);
- a number with a unit: the number, the unit in `unit`: `L2_BW = 18.2 GB/Sec` (`GB/Sec`),
  `gpgpu_simulation_rate = 26624 (inst/sec)` (`inst/sec`), `gpgpu_silicon_slowdown = 368369x`
  (`x`), `gpgpu_simulation_time = 0 days, 0 hrs, 0 min, 2 sec (2 sec)` (2, `sec`);
- `traffic_breakdown_coretomem[GLOBAL_ACC_R] = 16512 {8:2064,}`: the total under the key, and
  each `{size:count}` item as `<key>{8}` 2064;
- `average row locality = 2056/192 = 10.708333`: the result, 10.708333;
- `min_bank_accesses = 0!`: 0; `In Dram Latency Queue (total = 0):`: `In Dram Latency Queue
  (total)` 0, its parenthesis closed.

A repeated key's number (`#2`, see the API reference's Results) stays at the end of every field's
key: `In Dram Latency Queue (total)#2`. Anything else (`kernel_name`, a shape not listed) stays
as it is. Pure: no I/O.
"""

from __future__ import annotations

import math
import re

StatValue = float | str
Field = tuple[str, StatValue, str | None]  # key, value, unit

_NUMBER = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+|nan|inf(?:inity)?)"
_REPEAT = re.compile(r"^(.*?)(#\d+)?$", re.S)
_PAIR = re.compile(rf"\s*([A-Za-z_]\w*)\s*=\s*({_NUMBER})\s*")
_WITH_UNIT = re.compile(rf"({_NUMBER})\s*\(?([A-Za-z%/]+(?:/[A-Za-z]+)?)\)?")
_BREAKDOWN = re.compile(rf"({_NUMBER})\s*\{{((?:\s*\d+:\d+,?)*)\s*\}}")
_RATIO = re.compile(rf"{_NUMBER}\s*/\s*{_NUMBER}\s*=\s*({_NUMBER})")
_MARKED = re.compile(rf"({_NUMBER})\s*(!|\):?)")
_TIME = re.compile(rf".*\(\s*({_NUMBER})\s*(sec)\s*\)")


def number(text: str) -> float | None:
    """`196`, `0.985`, `-nan`, `inf` as a float (and `NaN`, `Infinity`, as JSON carries them);
    None for anything else."""
    text = text.strip()
    if not re.fullmatch(_NUMBER, text, flags=re.I):
        return None
    value = float(text)
    return math.nan if math.isnan(value) else value


def stat_fields(key: str, value: StatValue) -> list[Field]:
    """One stats line as numeric fields (the module's docstring says how each shape is named);
    a number, or a line of no known shape, is one field as it was."""
    if not isinstance(value, str):
        return [(key, value, None)]
    if (plain := number(value)) is not None:  # NaN and infinities travel as text in JSON
        return [(key, plain, None)]
    base, repeat = _split_repeat(key)
    text = value.strip()
    if (fields := _pairs(base, text)) is not None:
        return [(name + repeat, v, None) for name, v in fields]
    if m := _BREAKDOWN.fullmatch(text):
        items = [item.split(":") for item in m[2].replace(" ", "").split(",") if item]
        return [
            (key, _num(m[1]), None),
            *((f"{base}{{{size}}}{repeat}", float(n), None) for size, n in items),
        ]
    if m := _RATIO.fullmatch(text):
        return [(key, _num(m[1]), None)]
    if m := _MARKED.fullmatch(text):
        if m[2].startswith(")") and base.count("(") > base.count(")"):
            return [(f"{base}){repeat}", _num(m[1]), None)]
        return [(key, _num(m[1]), None)]
    if m := _TIME.fullmatch(text):
        return [(key, _num(m[1]), m[2])]
    if m := _WITH_UNIT.fullmatch(text):
        return [(key, _num(m[1]), m[2])]
    return [(key, value, None)]


def _split_repeat(key: str) -> tuple[str, str]:
    m = _REPEAT.fullmatch(key)
    assert m is not None  # the pattern matches any text
    return m[1], m[2] or ""


def _num(text: str) -> float:
    value = number(text)
    return math.nan if value is None else value


def _pairs(base: str, text: str) -> list[tuple[str, float]] | None:
    """`L1D_cache_core[0]: Access` = `196, Miss = 193, ...` -> the pairs, or None for another
    shape. The key holds the line's name and its first field's name, after `: `."""
    name, colon, first = base.rpartition(": ")
    if not colon or not name or "," not in text:
        return None
    head, *rest = text.split(",")
    values = [(first.strip(), number(head))]
    for part in rest:
        m = _PAIR.fullmatch(part)
        if m is None:
            return None
        values.append((m[1], number(m[2])))
    if any(v is None for _, v in values):
        return None
    return [(f"{name}.{field}", v) for field, v in values if v is not None]
