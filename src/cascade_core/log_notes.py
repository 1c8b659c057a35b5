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

from . import power_report

PREFIX = "[cascade] "
_NAME_SEPARATOR = "; kernel name: "
# A reason is one line of at most this many characters (the simulator's own words, shortened).
MAX_REASON_CHARS = 400
MAX_NAME_CHARS = 4_000

# re.ASCII: `\d` is any script's digit otherwise; the worker writes ASCII ones.
_FAILED = re.compile(r"^\[cascade\] kernel #(\d+) failed in the simulator: ", re.ASCII)
_RESTART = re.compile(
    r"^\[cascade\] (restart|simulator) (\d+): kernels? ([#\d, -]+) of the trace, "
    r"after (\d+) warm-up kernels?(?: \(([#\d, -]+)\))?$",
    re.ASCII,
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


# Positions a note may name when the reader gives no bound of its own: more kernels than any trace.
MAX_POSITIONS = 10_000_000


def parse_ranges(text: str, limit: int = MAX_POSITIONS) -> tuple[int, ...]:
    """ranges_text read back, every position below `limit` (a sim's kernels) and no more of them
    than that: checked before anything is built, so a forged note costs nothing. ValueError for
    what the worker never writes."""
    bounds: list[tuple[int, int]] = []
    count = 0
    for part in text.split(","):
        part = part.strip()
        first, _, last = part[1:].partition("-")
        if not part.startswith("#") or not first.isdigit() or not (last or first).isdigit():
            raise ValueError(f"not a range of kernels: {part[:40]!r}")
        if len(first) > 12 or len(last) > 12:
            raise ValueError(f"kernel {part[:40]!r} is past the sim's {limit:,} kernels")
        low, high = int(first), int(last or first)
        if high < low:
            raise ValueError(f"not a range of kernels: {part!r}")
        count += high - low + 1
        if high >= limit or count > limit:
            raise ValueError(f"kernel {part[:40]!r} is past the sim's {limit:,} kernels")
        bounds.append((low, high))
    return tuple(p for low, high in bounds for p in range(low, high + 1))


def one_line(text: str, limit: int = MAX_REASON_CHARS) -> str:
    """`text` as one line of at most `limit` characters (control characters as blanks)."""
    flat = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def failure_line(failure: KernelFailure) -> str:
    # The reason never holds the separator, so the name after it may hold anything.
    reason = one_line(failure.reason).replace(_NAME_SEPARATOR.rstrip(), ", kernel name:")
    line = f"{PREFIX}kernel #{failure.kernel_index} failed in the simulator: {reason}"
    if failure.kernel_name:
        line += _NAME_SEPARATOR + one_line(failure.kernel_name, MAX_NAME_CHARS)
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


def parse_failure(line: str, limit: int = MAX_POSITIONS) -> KernelFailure | None:
    """A failure note read back; None for a line that is none, or that names a kernel at or past
    `limit` (the sim's kernels): the worker never writes one. Its reason and name are cut to the
    lengths the worker writes."""
    match = _FAILED.match(line)
    if match is None or len(match.group(1)) > 12 or int(match.group(1)) >= limit:
        return None
    rest = line[match.end() :]
    reason, _, name = rest.partition(_NAME_SEPARATOR)
    return KernelFailure(
        kernel_index=int(match.group(1)), reason=reason[:MAX_REASON_CHARS], kernel_name=name[:MAX_NAME_CHARS]
    )


def parse_restart(line: str, limit: int = MAX_POSITIONS) -> Restart | None:
    """A restart note read back; None for a line that is none, or one the worker never writes
    (kernels at or past `limit`, the sim's kernels; a warm-up count that does not match)."""
    match = _RESTART.match(line)
    if match is None:
        return None
    what, number, owned, count, warmup = match.groups()
    try:
        restart = Restart(
            number=0 if what == "simulator" else int(number[:12]),
            owned=parse_ranges(owned, limit),
            warmup=parse_ranges(warmup, limit) if warmup else (),
        )
    except ValueError:
        return None
    return restart if str(len(restart.warmup)) == count else None


# --- power (issue 34) ----------------------------------------------------------------------------
# A sim with `power: true` has AccelWattch's figures for each of its kernels, which the worker
# reads from the simulator's power report and writes into the log once the kernel's stats block
# is there (warm-up kernels' power is dropped, as their stats are):
#
#     [cascade] power #6: avg 57.2549 W, max 70.9738 W, min 55.4988 W; DCP 0.162636, RFP 0.0814328, ...
#     [cascade] no power for kernel #7: the power report has no whole block for it
#
# The components (W, AccelWattch's average per component) are the non-zero ones.

_POWER = re.compile(
    r"^\[cascade\] power #([0-9]{1,12}): avg (\S+) W, max (\S+) W, min (\S+) W(?:; (.*))?$", re.ASCII
)
MAX_COMPONENTS = 64
# A power note is at most this long (AccelWattch has 33 components: about 1 KB): a longer line
# is no note, and costs nothing to refuse.
MAX_POWER_NOTE_CHARS = 4_096


@dataclass(frozen=True, slots=True)
class KernelPowerNote:
    kernel_index: int
    avg_w: float
    max_w: float
    min_w: float
    components: tuple[tuple[str, float], ...] = ()


def power_line(note: KernelPowerNote) -> str:
    parts = ", ".join(f"{name} {value:.6g}" for name, value in note.components if value)
    return (
        f"{PREFIX}power #{note.kernel_index}: avg {note.avg_w:.6g} W, max {note.max_w:.6g} W, "
        f"min {note.min_w:.6g} W" + (f"; {parts}" if parts else "")
    )


def no_power_line(positions: list[int] | tuple[int, ...], why: str) -> str:
    kernels = "kernel" if len(positions) == 1 else "kernels"
    return f"{PREFIX}no power for {kernels} {ranges_text(positions)}: {why}"


def parse_power(line: str, limit: int = MAX_POSITIONS) -> KernelPowerNote | None:
    """A power note read back; None for a line that is none, names a kernel at or past `limit`,
    or holds a figure that is not a finite number (the worker never writes one)."""
    if len(line) > MAX_POWER_NOTE_CHARS:
        return None
    match = _POWER.match(line)
    if match is None or int(match.group(1)) >= limit:
        return None
    figures = [power_report.watts(match.group(i)) for i in (2, 3, 4)]
    if any(f is None for f in figures):
        return None
    components: list[tuple[str, float]] = []
    for part in (match.group(5) or "").split(", ")[:MAX_COMPONENTS]:
        name, _, value = part.partition(" ")
        watts = power_report.watts(value)
        if name.isascii() and name.isidentifier() and len(name) <= 32 and watts is not None:
            components.append((name, watts))
    avg, peak, low = figures
    assert avg is not None and peak is not None and low is not None
    return KernelPowerNote(int(match.group(1)), avg, peak, low, tuple(components))
