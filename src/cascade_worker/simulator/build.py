"""Run GPGPU-Sim's and Accel-Sim's make, and read its output: progress over the compiled objects,
and the compiler's error lines when it fails.

The pure part (`compiled_object`, `Progress`, `error_lines`) reads lines and keeps no I/O, so it
is tested on real make output; `run_make` is the subprocess around it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

# Objects one full build compiles (counted in a real build of the pinned commits with g++ 12):
# the bar's denominator. Other sources may compile more or fewer: the bar then stops at 99 %
# until make ends, or ends early at 100 %; the count is never wrong, only the guess.
EXPECTED_OBJECTS = 150

_OBJECT = re.compile(r"\s-o\s+(\S+\.o)(?:\s|$)")
_COMPILE_ONLY = re.compile(r"\s-c(?:\s|$)")
_COMPILER = re.compile(r"^\s*(\S*/)?(g\+\+|gcc|c\+\+|cc|clang\+\+|clang)(-\d+)?\s")
_ERROR = re.compile(
    r"(: (fatal )?error: |: undefined reference to |^make(\[\d+\])?: \*\*\* |No space left on device|"
    r"^collect2: |Error \d+\s*$|: No such file or directory|cannot find -l|: command not found|"
    r"Killed signal terminated program)"
)
MAX_ERROR_LINES = 12


def compiled_object(line: str) -> str | None:
    """The object file a compiler command line builds (`g++ … -c x.cc -o build/x.o`), else None."""
    if not _COMPILER.match(line):
        return None
    match = _OBJECT.search(line)
    return match.group(1) if match and _COMPILE_ONLY.search(line) else None


@dataclass
class Progress:
    """Objects compiled so far, from the make output fed line by line."""

    expected: int = EXPECTED_OBJECTS
    objects: set[str] = field(default_factory=set)

    def feed(self, line: str) -> bool:
        """True when the line started a new object."""
        name = compiled_object(line)
        if name is None or name in self.objects:
            return False
        self.objects.add(name)
        return True

    @property
    def done(self) -> int:
        return len(self.objects)

    def fraction(self, finished: bool = False) -> float:
        if finished:
            return 1.0
        return min(self.done / self.expected, 0.99) if self.expected else 0.0


def error_lines(lines: Iterable[str], limit: int = MAX_ERROR_LINES) -> list[str]:
    """The lines that say what went wrong: compiler errors, make's `***` lines, a full disk.
    The first ones matter most (later ones are often consequences), so the first `limit`."""
    found: list[str] = []
    for line in lines:
        text = line.rstrip()
        if _ERROR.search(text) and text not in found:
            found.append(text if len(text) <= 300 else text[:297] + "...")
            if len(found) >= limit:
                break
    return found


def bar(fraction: float, width: int = 30) -> str:
    filled = int(round(fraction * width))
    return "[" + "#" * filled + "." * (width - filled) + f"] {fraction * 100:3.0f}%"


def elapsed(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"


class BuildFailed(Exception):
    def __init__(self, message: str, errors: list[str]) -> None:
        super().__init__(message)
        self.errors = errors


SCRIPT = 'source gpu-simulator/setup_environment.sh >/dev/null 2>&1 || exit 97\nexec make -j"$JOBS" -C gpu-simulator\n'


def run_make(
    accelsim: Path, env: dict[str, str], log_path: Path, jobs: int, on_line: Callable[[str], None]
) -> None:
    """setup_environment.sh then make, in its own process group (a Ctrl+C stops every compiler);
    every line to the log file and `on_line`. Raises BuildFailed with the error lines."""
    env = {**env, "JOBS": str(jobs)}
    with open(log_path, "a", encoding="utf-8", errors="replace") as log:
        proc = subprocess.Popen(
            ["bash", "-c", SCRIPT],
            cwd=accelsim,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            text=True,
            errors="replace",
            bufsize=1,
        )
        assert proc.stdout is not None
        tail: list[str] = []
        try:
            for line in proc.stdout:
                log.write(line)
                tail.append(line)
                if len(tail) > 4000:
                    del tail[:2000]
                on_line(line)
            code = proc.wait()
        except BaseException:  # Ctrl+C, or the caller failed: no compiler outlives the build
            stop_group(proc)
            raise
    if code == 97:
        raise BuildFailed("gpu-simulator/setup_environment.sh failed", error_lines(tail) or tail[-5:])
    if code != 0:
        raise BuildFailed(
            f"make exited with status {code}", error_lines(tail) or [t.rstrip() for t in tail[-5:]]
        )


def stop_group(proc: subprocess.Popen, grace: float = 5.0) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
