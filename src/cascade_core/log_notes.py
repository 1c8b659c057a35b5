"""The lines of Cascade's own that a worker writes into a sim's log between the simulator's, and
how the server's log parser reads them back. One module writes and reads them, so the two agree.

A sim that goes on past a kernel the simulator failed on (`on_kernel_failure: "continue"`) runs
the simulator again on the rest of its kernels. Its log then holds, in order: the first
simulator's output, a failure note, a restart note, the next simulator's output, and so on. The
notes are the log's own record of what happened, so the server places every kernel and every
failure from the log alone (after a restart of the server too, or a replay of stored chunks), and
nothing is counted twice:

    [cascade] kernel #6 failed in the simulator: shader.cc:3812: ... Assertion `...' failed.; kernel name: _ZN2at6native13reduce_kernel...
    [cascade] restart 1: kernels #7-8 of the trace, after 1 warm-up kernel (#5)

A sampled sim (issue 33) simulates kernels here and there, each after its own warm-up kernels;
its log starts with the same note for its first simulator:

    [cascade] simulator 1: kernels #0, #4, #8-9 of the trace, after 2 warm-up kernels (#3, #7)

Kernels are numbered as the kernels view, `cascade results` and the API number them: `#N`, the
0-based position in the trace's `kernelslist.g` (`kernel_index`). Pure: text in, values out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PREFIX = "[cascade] "
_NAME_SEPARATOR = "; kernel name: "
# A reason is one line of at most this many characters (the simulator's own words, shortened).
MAX_REASON_CHARS = 400

_FAILED = re.compile(r"^\[cascade\] kernel #(\d+) failed in the simulator: ")
_RESTART = re.compile(
    r"^\[cascade\] (restart|simulator) (\d+): kernels? ([#\d, -]+) of the trace, "
    r"after (\d+) warm-up kernels?(?: \(([#\d, -]+)\))?$"
)


@dataclass(frozen=True, slots=True)
class KernelFailure:
    """A kernel the simulator failed on: its trace position (0-based), name and reason."""

    kernel_index: int
    reason: str
    kernel_name: str = ""


@dataclass(frozen=True, slots=True)
class Restart:
    """A new simulator, on the sim's kernels `owned` (0-based trace positions) after the warm-up
    kernels `warmup`, whose stats are not the run's; its list is both, in trace order. Number 0
    is a sim's first simulator when its list is not one range (a sampled sim)."""

    number: int
    owned: tuple[int, ...]
    warmup: tuple[int, ...] = ()

    @property
    def positions(self) -> list[int]:
        return sorted({*self.owned, *self.warmup})


def ranges_text(positions: tuple[int, ...] | list[int]) -> str:
    """Positions as the kernels view numbers them (`#N`, 0-based, the API's kernel_index), in
    ranges: (3, 4, 5, 9) -> "#3-5, #9"."""
    parts: list[str] = []
    ordered = sorted(set(positions))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        first, last = ordered[i], ordered[j]
        parts.append(f"#{first}" if first == last else f"#{first}-{last}")
        i = j + 1
    return ", ".join(parts)


def parse_ranges(text: str) -> tuple[int, ...]:
    """ranges_text read back; ValueError for what it never writes."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part.startswith("#"):
            raise ValueError(f"not a range of kernels: {part!r}")
        first, _, last = part[1:].partition("-")
        low, high = int(first), int(last or first)
        if low < 0 or high < low:
            raise ValueError(f"not a range of kernels: {part!r}")
        out.extend(range(low, high + 1))
    return tuple(out)


def one_line(text: str, limit: int = MAX_REASON_CHARS) -> str:
    """`text` as one line of at most `limit` characters (control characters as blanks)."""
    flat = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def failure_line(failure: KernelFailure) -> str:
    # The reason never holds the separator, so the name after it may hold anything.
    reason = one_line(failure.reason).replace(_NAME_SEPARATOR.rstrip(), ", kernel name:")
    line = f"{PREFIX}kernel #{failure.kernel_index} failed in the simulator: {reason}"
    if failure.kernel_name:
        line += _NAME_SEPARATOR + one_line(failure.kernel_name, 4_000)
    return line


def restart_line(restart: Restart) -> str:
    kernels = "kernel" if len(restart.owned) == 1 else "kernels"
    warm = "warm-up kernel" if len(restart.warmup) == 1 else "warm-up kernels"
    which = f" ({ranges_text(restart.warmup)})" if restart.warmup else ""
    what = f"restart {restart.number}" if restart.number else "simulator 1"
    return (
        f"{PREFIX}{what}: {kernels} {ranges_text(restart.owned)} of the trace, "
        f"after {len(restart.warmup)} {warm}{which}"
    )


def parse_failure(line: str) -> KernelFailure | None:
    match = _FAILED.match(line)
    if match is None:
        return None
    rest = line[match.end() :]
    reason, _, name = rest.partition(_NAME_SEPARATOR)
    return KernelFailure(kernel_index=int(match.group(1)), reason=reason, kernel_name=name)


def parse_restart(line: str) -> Restart | None:
    match = _RESTART.match(line)
    if match is None:
        return None
    what, number, owned, count, warmup = match.groups()
    try:
        restart = Restart(
            number=0 if what == "simulator" else int(number),
            owned=parse_ranges(owned),
            warmup=parse_ranges(warmup) if warmup else (),
        )
    except ValueError:
        return None
    return restart if len(restart.warmup) == int(count) else None
