"""Did the simulator succeed? Pure: fed the output lines and the exit status, no I/O.

Accel-Sim proves a complete run only by printing `GPGPU-Sim: *** exit detected ***` (its own
job_status/get_stats scripts rely on that line). It also exits 0 after `unsupported binary
version: N`, so exit status 0 alone is not success. See reference/accelsim-formats.md 1.5.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass, field

EXIT_LINE = "GPGPU-Sim: *** exit detected ***"

_DEADLOCK = re.compile(r"deadlock detected")
_DEADLOCK_DETAIL = "DEADLOCK"  # the lines after it: which cores stopped committing, busy partitions
_ASSERTION = re.compile(r"Assertion [`'\"]?(?P<expr>.*?)[`'\"]? failed")
# `accel-sim.out: shader.cc:3812: void ...: Assertion ... failed.`: the line without the program
_PROGRAM_PREFIX = re.compile(r"^\S*accel-sim\.out: ")
_UNSUPPORTED_BINARY = re.compile(r"unsupported binary version: ?(?P<version>-?\d+)?")
_UNDEFINED_INSTRUCTION = re.compile(r"ERROR:\s+undefined instruction : (?P<opcode>\S+)")
# Before the first kernel, a failing simulator (or the loader starting it) usually says why in
# one line: `symbol lookup error: … undefined symbol: …`, `error while loading shared libraries`,
# `GPGPU-Sim: ERROR …`, a config option it does not know. That line is the sim's error.
_EARLY_ERROR = re.compile(
    r"error|cannot |can't |not found|undefined symbol|No such file|Segmentation fault|Aborted|terminate called"
    r"|Unknown option|not supported",
    re.IGNORECASE,
)
_FIRST_KERNEL = "launching kernel name:"
# An allocation that failed: C++'s `terminate called after throwing an instance of
# 'std::bad_alloc'` (GPGPU-Sim allocates with `new`; the stderr line may land mid-line of buffered
# stdout), the C library's ENOMEM, or Python's (the stand-in). Under a memory limit, that limit.
_OUT_OF_MEMORY = ("std::bad_alloc", "Cannot allocate memory", "MemoryError")
# EFBIG: a write past the file size limit by a simulator that ignores SIGXFSZ (Python does).
_FILE_TOO_LARGE = "File too large"
_ABSOLUTE_PATH = re.compile(r"(?<![\w.])/(?:[^\s:/]+/)+([^\s:/]+)")

MAX_REASON_CHARS = 200


@dataclass
class OutputMarkers:
    """What the classifier needs to remember from the output, updated line by line."""

    exit_line: bool = False
    deadlock: bool = False
    assertion: str | None = None
    unsupported_binary: str | None = None
    undefined_instruction: str | None = None
    kernel_started: bool = False
    early_error: str | None = None  # the first error-like line before the first kernel
    # The simulator's own words, for a kernel it failed on: the assertion's whole line, and
    # GPGPU-Sim's deadlock report (its first lines).
    assertion_line: str | None = None
    deadlock_lines: list[str] = field(default_factory=list)
    out_of_memory: bool = False  # an allocation failed (sim_limits.py: the memory limit)
    file_too_large: bool = False  # a write failed with EFBIG (sim_limits.py: the file size limit)

    def feed(self, line: str) -> None:
        if line.startswith(EXIT_LINE):
            self.exit_line = True
            return
        if not self.out_of_memory and any(words in line for words in _OUT_OF_MEMORY):
            self.out_of_memory = True
        if not self.file_too_large and _FILE_TOO_LARGE in line:
            self.file_too_large = True
        if self.deadlock and len(self.deadlock_lines) < 3 and _DEADLOCK_DETAIL in line:
            self.deadlock_lines.append(line.strip())
        if not self.kernel_started:
            if line.startswith(_FIRST_KERNEL):
                self.kernel_started = True
            elif self.early_error is None and _EARLY_ERROR.search(line):
                self.early_error = _ABSOLUTE_PATH.sub(r"\1", line.strip())
        if self.deadlock is False and _DEADLOCK.search(line):
            self.deadlock = True
            self.deadlock_lines.append(line.strip())
        if self.assertion is None and (match := _ASSERTION.search(line)):
            self.assertion = match.group("expr")
            self.assertion_line = _PROGRAM_PREFIX.sub("", line.strip())
        if self.unsupported_binary is None and (match := _UNSUPPORTED_BINARY.search(line)):
            self.unsupported_binary = match.group("version") or "?"
        if self.undefined_instruction is None and (match := _UNDEFINED_INSTRUCTION.search(line)):
            self.undefined_instruction = match.group("opcode")


@dataclass(frozen=True)
class Outcome:
    state: str  # "succeeded" or "failed" (the Heartbeat states)
    error: str | None


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _shorten(text: str) -> str:
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 3] + "..."


def classify(returncode: int, markers: OutputMarkers) -> Outcome:
    """Success only on exit 0 with the exit line; otherwise the most telling short reason.

    `returncode` is as subprocess reports it: negative for a signal (-9 is SIGKILL), or 128+N
    when a shell reports a signal.
    """
    if returncode == 0 and markers.exit_line and markers.unsupported_binary is None:
        return Outcome("succeeded", None)
    # What the output says beats how the process ended: a deadlock aborts, so it ends in SIGABRT.
    if markers.deadlock:
        return Outcome("failed", "deadlock detected")
    if markers.assertion is not None:
        return Outcome("failed", _shorten(f"assertion failed: {markers.assertion}"))
    if markers.undefined_instruction is not None:
        return Outcome("failed", _shorten(f"undefined instruction {markers.undefined_instruction}"))
    if markers.unsupported_binary is not None:
        return Outcome("failed", f"unsupported binary version {markers.unsupported_binary}")
    if markers.early_error is not None and returncode != 0:
        how = f"killed by {signal_name(-returncode)}" if returncode < 0 else f"exit status {returncode}"
        return Outcome("failed", _shorten(f"{markers.early_error} ({how})"))
    if returncode < 0:
        return Outcome("failed", f"killed by {signal_name(-returncode)}")
    if returncode > 128 and returncode - 128 in _signal_numbers():
        return Outcome("failed", f"killed by {signal_name(returncode - 128)}")
    if returncode == 0:
        return Outcome("failed", "exited 0 without the exit line")
    return Outcome("failed", f"exited with status {returncode}")


def _signal_numbers() -> set[int]:
    return {int(s) for s in signal.Signals}


# Signals a simulator raises on itself when it fails inside the simulation (abort() after an
# assertion or a deadlock report, a crash). TERM, KILL, INT, HUP come from outside (a cancel, the
# launcher, the scheduler) and XCPU from a limit: those end the sim, they are no kernel's failure.
KERNEL_FAILURE_SIGNALS = frozenset(
    {
        signal.SIGABRT,
        signal.SIGSEGV,
        signal.SIGBUS,
        signal.SIGFPE,
        signal.SIGILL,
        signal.SIGTRAP,
        signal.SIGSYS,
    }
)


def signal_of(returncode: int) -> int | None:
    """The signal that ended a process, from its return code (-N, or 128+N from a shell)."""
    if returncode < 0:
        return -returncode
    if returncode > 128 and returncode - 128 in _signal_numbers():
        return returncode - 128
    return None


def kernel_failure(returncode: int, markers: OutputMarkers) -> str | None:
    """The simulator's own reason when it stopped abnormally inside the simulation (the caller
    knows whether a kernel was running), or None when the way it ended is no kernel's failure:
    success, a kill from outside, an arch the simulator cannot read, memory that ran out (the
    host's or the memory limit's: the next simulator would run out as well)."""
    if (
        classify(returncode, markers).state == "succeeded"
        or markers.unsupported_binary is not None
        or markers.out_of_memory
    ):
        return None
    if markers.deadlock:
        return "; ".join(markers.deadlock_lines) or "deadlock detected"
    if markers.assertion_line is not None:
        return markers.assertion_line
    number = signal_of(returncode)
    if number is not None:
        return f"killed by {signal_name(number)}" if number in KERNEL_FAILURE_SIGNALS else None
    if markers.undefined_instruction is not None:
        return f"undefined instruction {markers.undefined_instruction} (exit status {returncode})"
    if returncode != 0:
        return f"exited with status {returncode}"
    return None
