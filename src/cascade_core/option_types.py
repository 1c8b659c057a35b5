"""The type GPGPU-Sim gives each of its options, and whether a value parses as that type. Pure.

GPGPU-Sim registers every option with a C type (`option_parser_register(opp, "-gpgpu_n_clusters",
OPT_UINT32, ...)`, its option table), but its config echo prints only names, values and
descriptions. So the table is read from the simulator's own sources (the server reads the files,
`parse_option_table` the text), and a value is checked against its option's type before a run
starts, because the simulator itself is lax in ways that matter:

- a boolean option whose value does not parse takes no value: the value is read as the next
  option's name (`-visualizer_enabled -trace ...` sets `-trace`), and a number other than 0 or 1
  aborts on an assertion;
- an integer is read by `istream >>`: `-5` for an unsigned option wraps to 4294967291, `12abc`
  is silently 12, and a leading `0` switches to octal (`010` is 8, `08` fails);
- a number too large for its type, or not finite, makes it exit at start-up (or worse, silently
  saturate).

Options registered under a computed name (`-specialized_unit_1`, ...) have no type here; their
values still follow the rules every value follows (cascade_core.variants.value_problem).
"""

from __future__ import annotations

import math
import re

from cascade_core.quoting import quoted

# GPGPU-Sim's `enum option_dtype`, as the words used here.
C_TYPES = {
    "OPT_INT32": "int32",
    "OPT_UINT32": "uint32",
    "OPT_INT64": "int64",
    "OPT_UINT64": "uint64",
    "OPT_BOOL": "bool",
    "OPT_FLOAT": "float",
    "OPT_DOUBLE": "double",
    "OPT_CHAR": "char",
    "OPT_CSTR": "text",
}

INTEGER_RANGES = {
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint64": (0, 2**64 - 1),
}
# The largest finite value and the smallest normal one: a subnormal or zero-rounding value is no
# sane setting of a simulator parameter (and `istream >>` may refuse it).
FLOAT_RANGES = {
    "float": (1.1754943508222875e-38, 3.4028234663852886e38),
    "double": (2.2250738585072014e-308, 1.7976931348623157e308),
}

_REGISTER = re.compile(r'option_parser_register\s*\(\s*\w+\s*,\s*"(-[^"\s]+)"\s*,\s*(OPT_[A-Z0-9]+)\b')
_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_HEX = re.compile(r"0[xX][0-9a-fA-F]+")
_FLOAT = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def parse_option_table(source: str) -> dict[str, str]:
    """Option name -> type word (`C_TYPES` values) for every `option_parser_register` call with a
    literal name in `source` (C++ text). A name registered with two types has none."""
    table: dict[str, str] = {}
    conflicting: set[str] = set()
    for name, c_type in _REGISTER.findall(source):
        kind = C_TYPES.get(c_type)
        if kind is None:
            continue
        if table.get(name, kind) != kind:
            conflicting.add(name)
        table[name] = kind
    for name in conflicting:
        del table[name]
    return table


def merge_tables(tables: list[dict[str, str]]) -> dict[str, str]:
    """Several files' tables as one; a name two files give different types has none."""
    merged: dict[str, str] = {}
    conflicting: set[str] = set()
    for table in tables:
        for name, kind in table.items():
            if merged.get(name, kind) != kind:
                conflicting.add(name)
            merged[name] = kind
    return {name: kind for name, kind in merged.items() if name not in conflicting}


def typed_value_problem(name: str, value: str, kind: str) -> str | None:
    """Why the simulator would not read `value` as the `kind` (a `C_TYPES` word) option `name`
    means, or None."""
    if kind in INTEGER_RANGES:
        return _integer_problem(name, value, kind)
    if kind in FLOAT_RANGES:
        return _float_problem(name, value, kind)
    if kind == "bool":
        if value in ("0", "1"):
            return None
        return f"option {quoted(name)} is on or off: its value is 0 or 1, not {quoted(value)}"
    if kind == "char":
        if len(value) == 1:
            return None
        return f"option {quoted(name)} takes one character, not {quoted(value)}"
    return None  # text: any value the general rules allow


def _integer_problem(name: str, value: str, kind: str) -> str | None:
    low, high = INTEGER_RANGES[kind]
    what = f"option {quoted(name)} takes a whole number from {low} to {high}"
    if _HEX.fullmatch(value):
        number = int(value, 16)
    elif _DECIMAL.fullmatch(value):
        number = int(value)
    elif value.lstrip("+-").isdigit() and value.lstrip("+-").startswith("0"):
        # The simulator reads a leading 0 as octal: 010 would be 8, and 08 fails.
        return (
            f"{what}, written without a leading 0 (the simulator reads 010 as octal 8), not {quoted(value)}"
        )
    else:
        return f"{what}, not {quoted(value)}"
    if not low <= number <= high:
        return f"{what}, not {quoted(value)}"
    return None


def _float_problem(name: str, value: str, kind: str) -> str | None:
    smallest, largest = FLOAT_RANGES[kind]
    what = f"option {quoted(name)} takes a number ({kind}) that is 0 or from {smallest:.4g} to {largest:.4g} in size"
    # A leading 0 is dropped before the number is read (the octal rule of integers): `0e5` is
    # read as `e5`, which fails.
    if not _FLOAT.fullmatch(value) or (value.startswith("0") and value[1:2] not in ("", ".")):
        return f"{what}, not {quoted(value)}"
    if value.startswith("0.") and not value[2:3].isdigit():
        return f"{what}, not {quoted(value)}"
    number = float(value)
    if not math.isfinite(number) or abs(number) > largest or (number != 0 and abs(number) < smallest):
        return f"{what}, not {quoted(value)}"
    return None
