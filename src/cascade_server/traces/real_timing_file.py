"""A trace's real_timing.json, read once, when the trace becomes ready, in a process of its own.

Parsing a 12 MB file (300,000 kernels) is a second of one C call (`json.loads`) that holds the
interpreter: in the server's process, in a thread or not, every request would wait for it. So
the server runs `python -m cascade_server.traces.real_timing_file FILE`, which reads the file
within its bound, parses it and checks it (cascade_core/real_timing.py) and answers on stdout in
frames small enough to unpack between requests; the server stores the rows
(storage/real_timing.py), and `/comparison` and `/api/accuracy` answer from them.

The trace's own kernel names (its stats files', by kernel id) go to the child on stdin: a row
without a name is named after the trace's kernel of its id, and a file that names none of the
trace's kernels is refused. Either way the trace gets a one-line `real_timing_error` when the
file gives no real timing, and `has_real_timing` only when it does.
"""

from __future__ import annotations

import asyncio
import json
import pickle
import struct
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from cascade_core.bounded_read import TIMING_FILE_MAX_BYTES, describe_bytes, read_bounded
from cascade_core.childproc import die_with_parent
from cascade_core.models import KernelLaunch
from cascade_core.real_timing import RealRow, RealTimingError, named_rows, parse_real_timing, timing_problem
from cascade_core.trace_layout import REAL_TIMING_NAME, locate

# Rows per frame: each unpacks in a few milliseconds, between which the event loop runs.
FRAME_ROWS = 10_000
_LENGTH = struct.Struct("!Q")


@dataclass(frozen=True)
class RealTimingRead:
    """What a trace's real_timing.json gives: rows to store, or why it gives none (`error`);
    both empty when the trace has no such file."""

    rows: list[RealRow]
    error: str | None = None

    def trace_fields(self) -> dict[str, Any]:
        return {"has_real_timing": bool(self.rows), "real_timing_error": self.error}


NO_REAL_TIMING = RealTimingRead([])


def read_file(path: Path, trace_names: dict[int, str]) -> RealTimingRead:
    """The file's rows (named after the trace's kernels where it names none), or why not. Blocking."""
    try:
        raw = read_bounded(path, TIMING_FILE_MAX_BYTES, REAL_TIMING_NAME, decompress=False)
    except OSError as exc:
        return RealTimingRead([], f"{REAL_TIMING_NAME} cannot be read: {exc.strerror or exc}")
    except ValueError as exc:  # TooLargeError
        return RealTimingRead([], str(exc).splitlines()[0])
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else "nesting too deep"
        return RealTimingRead([], f"{REAL_TIMING_NAME} is not JSON: {reason}")
    try:
        rows = named_rows(parse_real_timing(doc), trace_names)
    except RealTimingError as exc:
        return RealTimingRead([], str(exc))
    if problem := timing_problem(rows, trace_names):
        return RealTimingRead([], problem)
    return RealTimingRead(rows)


def _write_frames(read: RealTimingRead, out: IO[bytes]) -> None:
    frames = [pickle.dumps(read.error)] + [
        pickle.dumps([tuple(row) for row in read.rows[start : start + FRAME_ROWS]])
        for start in range(0, len(read.rows), FRAME_ROWS)
    ]
    for frame in frames:
        out.write(_LENGTH.pack(len(frame)) + frame)
    out.flush()


def _frames(data: bytes) -> list[bytes]:
    frames, at = [], 0
    while at < len(data):
        (length,) = _LENGTH.unpack_from(data, at)
        frames.append(data[at + _LENGTH.size : at + _LENGTH.size + length])
        at += _LENGTH.size + length
    return frames


def _unpack(data: bytes) -> RealTimingRead:
    """The child's answer (a thread: a frame at a time, the event loop runs between them)."""
    frames = _frames(data)
    error = pickle.loads(frames[0])
    rows = [RealRow(*values) for frame in frames[1:] for values in pickle.loads(frame)]
    return RealTimingRead(rows, error)


async def read_real_timing(
    trace_dir: Path, metadata: dict[str, Any] | None, kernels: list[KernelLaunch], timeout_s: float
) -> RealTimingRead:
    """The trace's real timing (NO_REAL_TIMING without a real_timing.json), read in a child
    process that dies with the server and within `timeout_s`."""
    path = await asyncio.to_thread(locate, trace_dir, REAL_TIMING_NAME, metadata)
    if path is None:
        return NO_REAL_TIMING
    names = pickle.dumps({kernel.kernel_id: kernel.name for kernel in kernels})
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        __name__,
        str(path),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        preexec_fn=die_with_parent(),
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(names), timeout_s)
    except (asyncio.CancelledError, TimeoutError) as exc:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        if isinstance(exc, TimeoutError):
            return RealTimingRead([], f"{REAL_TIMING_NAME} took longer than {timeout_s:g} s to read")
        raise
    if proc.returncode != 0:
        lines = [line for line in err.decode(errors="replace").splitlines() if line.strip()]
        why = lines[-1] if lines else f"the reader exited with code {proc.returncode}"
        return RealTimingRead([], f"{REAL_TIMING_NAME} could not be read: {why}")
    return await asyncio.to_thread(_unpack, out)


def main(argv: list[str]) -> int:
    names = pickle.loads(sys.stdin.buffer.read())
    try:
        read = read_file(Path(argv[0]), names)
    except MemoryError:
        read = RealTimingRead(
            [],
            f"{REAL_TIMING_NAME} needs more memory to read than there is (at most {describe_bytes(TIMING_FILE_MAX_BYTES)})",
        )
    _write_frames(read, sys.stdout.buffer)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
