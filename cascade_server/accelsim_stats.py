"""The stats lines of an Accel-Sim kernel block: what one line holds, and reading a block's lines.

Pure logic, no I/O; the parser (accelsim_log.py, whose docstring says what is recognised) reads
every line between a block's first and last lines with `read_block_lines`. About 97% of a real
log is such lines, so this is the parser's hot loop: each kept line costs a dict entry, and what
each line holds is remembered (lines repeat from kernel to kernel).
"""

from __future__ import annotations

import re

__all__ = ["FIRST_LINE", "STATS_LINE_MAX", "clear_cache", "parse_value", "read_block_lines"]

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
# remembering them makes the parser about 1.3 times faster (benchmarks/bench_parser.py). Shared
# by every parser in the process and bounded: at most _LINE_CACHE_LIMIT lines of up to
# _CACHED_LINE_MAX characters (real stats lines are under 150), about 20 MB, emptied when full.
_LINE_CACHE_LIMIT = 50_000
_CACHED_LINE_MAX = 200
_line_cache: dict[str, tuple[str, float | str] | None] = {}
# What the cache gives for a line not in it (None there is a line of neither form): an entry
# no line can hold, told by identity.
_UNSEEN: tuple[str, float | str] = ("", "unseen")


def clear_cache() -> None:
    """Forget the lines remembered (benchmarks time a cold start with this)."""
    _line_cache.clear()


def read_block_lines(
    block: dict[str, float | str],
    lines: list[str],
    start: int,
    max_keys: int,
    repeats: dict[str, int],
    end: int | None = None,
) -> tuple[int, bool]:
    """Read the lines of the block being read, from `lines[start]` on, into `block`: up to its
    last line (the one starting `gpgpu_silicon_slowdown = `, read too) or the next block's first
    line (starting `kernel_name = `, not read), or `lines[end]` (not read; the end of `lines`
    when None). Return the index of the first line not read and whether the block's last line
    was read.

    The key/value lines go in the first occurrence of a key under its name, the n-th under
    `<key>#<n>` (the next number not taken), while the block has fewer than `max_keys` keys.
    `repeats` remembers each key's latest number in the block: only a shortcut (empty, the
    numbers found are the same), so a restored parser starts it empty."""
    stop = len(lines) if end is None else end
    room = max_keys - len(block)  # keys that may still be added
    cache = _line_cache
    for i in range(start, stop):
        line = lines[i]
        if "=" not in line:  # neither form, nor a block's first or last line
            continue
        ended = line.startswith(_BLOCK_MARKERS)
        if ended and line.startswith(FIRST_LINE):
            return i, False  # the next block's first line: this block was cut off
        if room > 0 and len(line) <= STATS_LINE_MAX:
            entry = cache.get(line, _UNSEEN)
            if entry is _UNSEEN:
                entry = _line_entry(line)
                if len(line) <= _CACHED_LINE_MAX:
                    if len(cache) >= _LINE_CACHE_LIMIT:
                        cache.clear()
                    cache[line] = entry
            if entry is not None:
                key, value = entry
                if key not in block:
                    block[key] = value
                else:
                    n = repeats.get(key, 1) + 1
                    while (name := f"{key}#{n}") in block:  # taken by a key of that name
                        n += 1
                    repeats[key] = n
                    block[name] = value
                room -= 1
        if ended:
            return i + 1, True
    return stop, False
