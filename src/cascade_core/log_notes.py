"""The lines of Cascade's own that a worker writes into a sim's log between the simulator's, and
how the server's log parser reads them back. One module writes and reads them, so the two agree.

A sim that goes on past a kernel the simulator failed on (`on_kernel_failure: "continue"`) runs
the simulator again on the rest of its kernels. Its log then holds, in order: the first
simulator's output, a failure note, a restart note, the next simulator's output, and so on. The
notes are the log's own record of what happened, so the server places every kernel and every
failure from the log alone (after a restart of the server too, or a replay of stored chunks), and
nothing is counted twice:

    [cascade] kernel 7 failed in the simulator: shader.cc:3812: ... Assertion `...' failed.; kernel name: _ZN2at6native13reduce_kernel...
    [cascade] restart 1: kernels 8-9 of the trace, after 1 warm-up kernel (6)

Kernel numbers in the notes are 1-based trace positions, as people count them; the parsed values
are 0-based, as the API's `kernel_index`. Pure: text in, values out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PREFIX = "[cascade] "
_NAME_SEPARATOR = "; kernel name: "
# A reason is one line of at most this many characters (the simulator's own words, shortened).
MAX_REASON_CHARS = 400

_FAILED = re.compile(r"^\[cascade\] kernel (\d+) failed in the simulator: ")
_RESTART = re.compile(
    r"^\[cascade\] restart (\d+): kernels? (\d+)(?:-(\d+))? of the trace, after (\d+) warm-up kernels?"
)


@dataclass(frozen=True, slots=True)
class KernelFailure:
    """A kernel the simulator failed on: its trace position (0-based), name and reason."""

    kernel_index: int
    reason: str
    kernel_name: str = ""


@dataclass(frozen=True, slots=True)
class Restart:
    """A new simulator, on the sim's kernels from `first` (0-based trace position) to `last`,
    after `warmup` warm-up kernels whose stats are not the run's."""

    number: int
    first: int
    last: int
    warmup: int
    warmup_positions: tuple[int, ...] = ()  # for the reader of the log; the parser needs the count


def one_line(text: str, limit: int = MAX_REASON_CHARS) -> str:
    """`text` as one line of at most `limit` characters (control characters as blanks)."""
    flat = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def failure_line(failure: KernelFailure) -> str:
    # The reason never holds the separator, so the name after it may hold anything.
    reason = one_line(failure.reason).replace(_NAME_SEPARATOR.rstrip(), ", kernel name:")
    line = f"{PREFIX}kernel {failure.kernel_index + 1} failed in the simulator: {reason}"
    if failure.kernel_name:
        line += _NAME_SEPARATOR + one_line(failure.kernel_name, 4_000)
    return line


def restart_line(restart: Restart) -> str:
    first, last = restart.first + 1, restart.last + 1
    kernels = f"kernel {first}" if first == last else f"kernels {first}-{last}"
    warm = "warm-up kernel" if restart.warmup == 1 else "warm-up kernels"
    which = (
        f" ({', '.join(str(p + 1) for p in restart.warmup_positions)})" if restart.warmup_positions else ""
    )
    return f"{PREFIX}restart {restart.number}: {kernels} of the trace, after {restart.warmup} {warm}{which}"


def parse_failure(line: str) -> KernelFailure | None:
    match = _FAILED.match(line)
    if match is None:
        return None
    rest = line[match.end() :]
    reason, _, name = rest.partition(_NAME_SEPARATOR)
    return KernelFailure(kernel_index=int(match.group(1)) - 1, reason=reason, kernel_name=name)


def parse_restart(line: str) -> Restart | None:
    match = _RESTART.match(line)
    if match is None:
        return None
    number, first, last, warmup = match.groups()
    first_i = int(first) - 1
    return Restart(
        number=int(number),
        first=first_i,
        last=int(last) - 1 if last is not None else first_i,
        warmup=int(warmup),
    )
