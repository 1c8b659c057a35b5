"""The stats lines of an Accel-Sim kernel block: what one line holds, and reading a block's lines.

Pure logic, no I/O; the parser (accelsim_log.py, whose docstring says what is recognised) reads
every line between a block's first and last lines with `read_block_lines`. About 97% of a real
log is such lines, so this is the parser's hot loop: each kept line costs a dict entry, and what
each line holds is remembered (lines repeat from kernel to kernel).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from operator import itemgetter

__all__ = [
    "FIRST_LINE",
    "STATS_LINE_MAX",
    "block_stats",
    "clear_cache",
    "pair_bytes",
    "parse_value",
    "read_block_lines",
]

# A line longer than this is no stats line (real ones are under 150 characters): not read into a
# block, so an open block's bytes are bounded as well as its keys.
STATS_LINE_MAX = 1024
FIRST_LINE = "kernel_name = "  # a stats block's first line starts so ...
_BLOCK_MARKERS = (FIRST_LINE, "gpgpu_silicon_slowdown = ")  # ... and its last line so

# The `key=value` line form; only tried on the few block lines that have "=" but no " = ".
_KEY_EQ_VALUE_RE = re.compile(r"\s*([A-Za-z_][\w.\[\]]*)=([^\s=]+)\s*")

_SEP = " = "
_NUMBER_START = frozenset("0123456789+-.nNiI")


def parse_value(raw: str) -> float | str:
    """One stats value: a float when it is a number (see accelsim_log's docstring), else the
    stripped string."""
    s = raw.strip()
    # Cheap rejections first: an exception from float() costs more than the rest of the line.
    if not s or s[0] not in _NUMBER_START or " " in s or "," in s or "_" in s:
        return s
    try:
        return float(s[:-1] if s[-1] == "%" else s)
    except ValueError:
        return s


def _key_eq_value(line: str) -> tuple[str, str] | None:
    """The key and raw value of a stripped `key=value` line, else None."""
    m = _KEY_EQ_VALUE_RE.fullmatch(line)
    return None if m is None else (m[1], m[2])


def _line_entry(line: str) -> tuple[str, float | str] | None:
    """What a block line holds: its key and value, or None for a line of neither form."""
    key, sep, raw = line.partition(_SEP)
    if sep:
        key = key.strip()
    else:  # no " = ": maybe a `key=value` line (a few per block)
        line = key.strip()
        if " " in line or "\t" in line:
            return None
        pair = _key_eq_value(line)
        if pair is None:
            return None
        key, raw = pair
    if not key:
        return None
    return key, parse_value(raw)


# What a line holds depends on the line alone, and stats lines repeat from kernel to kernel:
# remembering them makes the parser about 1.3 times faster (benchmarks/bench_parser.py), and
# lets a chunk's lines be looked up all at once, at C speed (`read_block_lines`). Shared by
# every parser in the process and bounded: at most _LINE_CACHE_LIMIT lines of up to
# _CACHED_LINE_MAX characters (real stats lines are under 150), about 20 MB, emptied when full.
# A line of neither form is remembered as () (falsy, so `filter(None, ...)` drops it).
_LINE_CACHE_LIMIT = 50_000
_CACHED_LINE_MAX = 200
_line_cache: dict[str, tuple[str, float | str] | tuple[()]] = {}

# The names a block's keys take (`block_stats`), by the block's keys in order: every kernel of
# a sim prints the same stats, so a block's shape repeats, and its numbering is worked out once.
_NAMES_CACHE_LIMIT = 64
_names_cache: dict[tuple[str, ...], tuple[str, ...]] = {}
_KEY, _VALUE = itemgetter(0), itemgetter(1)


def clear_cache() -> None:
    """Forget the lines and block shapes remembered (benchmarks time a cold start with this)."""
    _line_cache.clear()
    _names_cache.clear()


def _remember(line: str) -> tuple[str, float | str] | tuple[()]:
    """What a block line that is neither block marker holds, remembered when short enough."""
    if len(line) > STATS_LINE_MAX:
        return ()  # no stats line: not read (an open block is bounded in bytes too)
    entry = (_line_entry(line) if "=" in line else None) or ()
    if len(line) <= _CACHED_LINE_MAX:
        if len(_line_cache) >= _LINE_CACHE_LIMIT:
            _line_cache.clear()
        _line_cache[line] = entry
    return entry


def pair_bytes(pair: tuple[str, float | str]) -> int:
    """What a (key, value) pair of a block counts for its bound in bytes."""
    key, value = pair
    return len(key) + (len(value) if isinstance(value, str) else 8)


def read_block_lines(
    block: list[tuple[str, float | str]],
    lines: Sequence[str],
    start: int,
    max_keys: int,
    max_bytes: int | None = None,
) -> tuple[int, bool]:
    """Read the lines of the block being read, from `lines[start]` on, into `block`, its
    (key, value) pairs in log order (`block_stats` names them): up to its last line (the one
    starting `gpgpu_silicon_slowdown = `, read too) or the next block's first line (starting
    `kernel_name = `, not read), or the end of `lines`. A pair is added while the block has
    fewer than `max_keys` and, with `max_bytes` (what the block may still grow by), while the
    longest stats line would still fit: so the block keeps its first lines, and takes none once
    full. Return the index of the first line not read and whether the block's last line was read.

    The lines are looked up in the cache all at once; only those it does not hold (new lines,
    and the block's first and last lines, never remembered) are read one by one."""
    stop = len(lines)
    got: list[tuple[str, float | str] | tuple[()] | None] = list(map(_line_cache.get, lines[start:stop]))
    cut, ended = len(got), False
    i = 0
    while True:
        try:
            i = got.index(None, i)
        except ValueError:
            break
        line = lines[start + i]
        if line.startswith(_BLOCK_MARKERS):
            if line.startswith(FIRST_LINE):
                cut = i  # the next block's first line: this block was cut off
            else:
                got[i] = _line_entry(line) if len(line) <= STATS_LINE_MAX else None
                cut, ended = i + 1, True
            break
        got[i] = _remember(line)
        i += 1
    entries: list[tuple[str, float | str]] = list(filter(None, got[:cut] if cut < len(got) else got))  # type: ignore[arg-type]
    room = max_keys - len(block)
    if len(entries) > room:
        entries = entries[: max(room, 0)]
    if max_bytes is not None and len(entries) * STATS_LINE_MAX > max_bytes:  # near the bound
        fit = 0
        for entry in entries:
            if max_bytes < STATS_LINE_MAX:
                break
            max_bytes -= pair_bytes(entry)
            fit += 1
        entries = entries[:fit]
    block.extend(entries)
    return start + cut, ended


def block_stats(block: list[tuple[str, float | str]]) -> dict[str, float | str]:
    """A block's stats map: the first occurrence of a key under its name, the n-th under
    `<key>#<n>` (the next number not taken by a key of that name), in log order."""
    keys = tuple(map(_KEY, block))  # (at C speed: a block is a few thousand pairs)
    names = _names_cache.get(keys)
    if names is None:
        names = _numbered(keys)
        if len(_names_cache) >= _NAMES_CACHE_LIMIT:
            _names_cache.clear()
        _names_cache[keys] = names
    return dict(zip(names, map(_VALUE, block)))


def _numbered(keys: tuple[str, ...]) -> tuple[str, ...]:
    taken: set[str] = set()
    repeats: dict[str, int] = {}  # each key's latest number: where the search for a free one starts
    names = []
    for key in keys:
        name = key
        if key in taken:
            n = repeats.get(key, 1) + 1
            while (name := f"{key}#{n}") in taken:
                n += 1
            repeats[key] = n
        taken.add(name)
        names.append(name)
    return tuple(names)
