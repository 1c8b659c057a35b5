"""Did the simulator succeed? Pure: fed the output lines and the exit status, no I/O.

Accel-Sim proves a complete run only by printing `GPGPU-Sim: *** exit detected ***` (its own
job_status/get_stats scripts rely on that line). It also exits 0 after `unsupported binary
version: N`, so exit status 0 alone is not success. See reference/accelsim-formats.md 1.5.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass

EXIT_LINE = "GPGPU-Sim: *** exit detected ***"

_DEADLOCK = re.compile(r"deadlock detected")
_ASSERTION = re.compile(r"Assertion [`'\"]?(?P<expr>.*?)[`'\"]? failed")
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

    def feed(self, line: str) -> None:
        if line.startswith(EXIT_LINE):
            self.exit_line = True
            return
        if not self.kernel_started:
            if line.startswith(_FIRST_KERNEL):
                self.kernel_started = True
            elif self.early_error is None and _EARLY_ERROR.search(line):
                self.early_error = _ABSOLUTE_PATH.sub(r"\1", line.strip())
        if self.deadlock is False and _DEADLOCK.search(line):
            self.deadlock = True
        if self.assertion is None and (match := _ASSERTION.search(line)):
            self.assertion = match.group("expr")
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
