"""Post-process a mirrored trace directory so Accel-Sim can run it.

Run as its own process (`python -m cascade_server.traces.postprocess TRACE_DIR`) so a big trace
never blocks the server's event loop; it exits 0 when `traces/kernelslist.g` and every kernel it
names are in place, or prints one line (`error: ...`) on stderr and exits 1.

Steps:
1. `*.traceg.gz` (how the samples ship) are decompressed next to themselves: Accel-Sim reads only
   `.traceg` or `.xz`.
2. Unless the upload has `traces/kernelslist.g`: each raw `kernelslist*` in `traces/` is turned into
   `kernelslist.g` (the first, in name order) or `<name>.g`, and each raw `kernel-N.trace`
   (`.xz`, `.gz`) it names into `kernel-N.traceg` (`.traceg.xz` for xz input), as
   Accel-Sim's `post-traces-processing` does (pure logic in `grouping`).
3. Every kernel `traces/kernelslist.g` names must exist.

Limits (`Limits`, from the server's settings): a compressed file may expand to at most
`max_ratio` times its size (or `RATIO_FLOOR_BYTES`, for tiny files), and all compressed input of
the trace to at most `max_bytes` in total; decompression stops as soon as either is crossed, so a
bomb costs neither the disk nor the time. The server also bounds the run's time.

Failure leaves the directory as it was: a run that fails (a corrupt trace, a limit, a full disk)
removes every file it wrote, and a run that starts removes the temporary files of one that was
killed. One trace directory is post-processed by one process at a time (an exclusive lock on
`LOCK_NAME`), so a restarted server never runs a second post-processor beside an old one.
Exit codes: 0 done, 1 failed (`error: ...` on stderr), 3 failed for lack of disk space.
"""

from __future__ import annotations

import argparse
import errno
import fcntl
import gzip
import io
import lzma
import os
import secrets
import shutil
import signal
import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from cascade_core.bounded_read import TooLargeError, bounded_text_lines, read_bounded
from cascade_core.trace_inputs import kernel_files, memcpy_problem
from cascade_core.trace_limits import KERNELSLIST_MAX_BYTES
from cascade_core.upload_rules import KERNELSLIST_G, is_raw_kernelslist, layout_problem

from ..partial_files import TRACE_TEMP_DIR_NAME
from .grouping import (
    TraceFormatError,
    group_raw_trace,
    lines_like_getline,
    rewrite_kernelslist,
)

LOCK_NAME = ".postprocess.lock"
EXIT_FAILED = 1
EXIT_NO_SPACE = 3
RATIO_FLOOR_BYTES = 16 * 1024 * 1024
NO_SPACE_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
NO_SPACE_REASON = "no space left on the disk"


class PostprocessError(Exception):
    """Why a trace could not be post-processed; the message is one line."""


class NoSpaceError(PostprocessError):
    """The disk filled up: the trace can be processed again once there is space."""


@dataclass(frozen=True)
class Limits:
    """How far compressed input may expand (CASCADE_POSTPROCESS_MAX_RATIO / _MAX_BYTES)."""

    max_ratio: float = 500.0
    max_bytes: int = 64 * 1024**3


@dataclass
class _Run:
    """One post-processing run: its limits, what it decompressed so far, the files it wrote."""

    limits: Limits
    temp_prefix: Path  # temporary files are this plus a suffix (`temporary_prefix`)
    expanded: int = 0
    written: list[Path] = field(default_factory=list)


class _ExpansionGuard(io.RawIOBase):
    """A decompressing stream that raises PostprocessError once the file has expanded past its
    ratio or the trace past its total (checked as the bytes come, before they are kept)."""

    def __init__(self, stream: io.BufferedIOBase, path: Path, source: str, run: _Run) -> None:
        self.stream = stream
        self.source = source
        self.run = run
        self.allowed = max(int(path.stat().st_size * run.limits.max_ratio), RATIO_FLOOR_BYTES)
        self.seen = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.stream.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        self.seen += n
        self.run.expanded += n
        if self.seen > self.allowed:
            raise PostprocessError(
                f"{self.source} expands to more than {self.run.limits.max_ratio:g} times its size "
                f"(CASCADE_POSTPROCESS_MAX_RATIO)"
            )
        if self.run.expanded > self.run.limits.max_bytes:
            raise PostprocessError(
                f"the trace's compressed files expand to more than {self.run.limits.max_bytes} bytes "
                f"(CASCADE_POSTPROCESS_MAX_BYTES)"
            )
        return n

    def close(self) -> None:
        self.stream.close()
        super().close()


def _open_binary(path: Path, source: str, run: _Run) -> IO[bytes]:
    """The decompressed bytes of `path`, guarded by the run's expansion limits."""
    if path.name.endswith(".xz"):
        return io.BufferedReader(_ExpansionGuard(lzma.open(path, "rb"), path, source, run), 1 << 16)
    if path.name.endswith(".gz"):
        return io.BufferedReader(_ExpansionGuard(gzip.open(path, "rb"), path, source, run), 1 << 16)
    return open(path, "rb")


def _output_cap(raw: Path, run: _Run) -> int:
    """How many bytes one regrouped kernel trace may have: what its input may expand to (a raw
    trace whose few lines claim a huge launch would otherwise write far more than it holds)."""
    return max(int(raw.stat().st_size * run.limits.max_ratio), RATIO_FLOOR_BYTES)


@contextmanager
def _atomic_writer(path: Path, run: _Run, binary: bool = False) -> Iterator[IO]:
    """Write to a temporary file (`temporary_prefix`: never beside `path`) and rename it into
    place only when complete, so a crash never leaves a half-written trace that looks finished."""
    tmp = run.temp_prefix.with_name(f"{run.temp_prefix.name}{os.getpid()}.{secrets.token_hex(4)}")
    try:
        f: IO[Any]
        if path.name.endswith(".xz") and not binary:
            f = lzma.open(tmp, "wt", encoding="utf-8", preset=1)  # as the tool's `xz -1`
        else:
            f = open(tmp, "wb" if binary else "w", encoding=None if binary else "utf-8")
        with f:
            yield f
        os.replace(tmp, path)
        run.written.append(path)
    finally:
        tmp.unlink(missing_ok=True)


_READ_ERRORS = (OSError, EOFError, lzma.LZMAError, zlib.error, UnicodeDecodeError)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.errno in NO_SPACE_ERRNOS:
        raise NoSpaceError(f"{NO_SPACE_REASON} ({exc.strerror})") from None
    if isinstance(exc, UnicodeDecodeError):
        return "not text (undecodable bytes)"
    if isinstance(exc, (lzma.LZMAError, zlib.error, gzip.BadGzipFile, EOFError)):
        return f"corrupt compressed data ({exc or type(exc).__name__})"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def gunzip_traceg_files(traces_dir: Path, run: _Run) -> None:
    for gz in sorted(traces_dir.rglob("*.traceg.gz")):
        target = gz.with_name(gz.name[: -len(".gz")])
        if target.is_file():
            continue
        source = f"traces/{gz.relative_to(traces_dir)}"
        try:
            with _open_binary(gz, source, run) as src, _atomic_writer(target, run, binary=True) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        except _READ_ERRORS as exc:
            raise PostprocessError(f"{source}: {_reason(exc)}") from None


def process_kernel(raw: Path, output: Path, source: str, run: _Run) -> None:
    """Regroup one raw kernel trace into its `.traceg`."""
    cap, written = _output_cap(raw, run), 0
    try:
        with _open_binary(raw, source, run) as src, _atomic_writer(output, run) as dst:
            # Line by line, each bounded: a line of a billion NULs fails at its first MiB.
            for line in group_raw_trace(lines_like_getline(bounded_text_lines(src, source)), source):
                written += len(line) + 1
                if written > cap:
                    raise PostprocessError(
                        f"{source} regroups to more than {run.limits.max_ratio:g} times its size "
                        f"(CASCADE_POSTPROCESS_MAX_RATIO)"
                    )
                dst.write(line)
                dst.write("\n")
    except (TraceFormatError, TooLargeError) as exc:
        raise PostprocessError(str(exc)) from None
    except _READ_ERRORS as exc:
        raise PostprocessError(f"{source}: {_reason(exc)}") from None


def _find_raw(traces_dir: Path, name: str, kernelslist: str) -> Path:
    for candidate in (name, f"{name}.xz", f"{name}.gz"):
        path = traces_dir / candidate
        if path.is_file():
            return path
    raise PostprocessError(f"traces/{kernelslist} names {name}, which is not in the upload")


def process_kernelslists(traces_dir: Path, run: _Run) -> None:
    lists = sorted(p for p in traces_dir.iterdir() if p.is_file() and is_raw_kernelslist(p.name))
    # kernelslist.g is written last: it is what marks the trace as processed.
    for index, kernelslist in reversed(list(enumerate(lists))):
        try:
            text = read_bounded(kernelslist, KERNELSLIST_MAX_BYTES, f"traces/{kernelslist.name}").decode(
                "utf-8"
            )
        except TooLargeError as exc:
            raise PostprocessError(str(exc)) from None
        except _READ_ERRORS as exc:
            raise PostprocessError(f"traces/{kernelslist.name}: {_reason(exc)}") from None
        try:
            out_lines, kernels = rewrite_kernelslist(text.splitlines(), f"traces/{kernelslist.name}")
        except TraceFormatError as exc:
            raise PostprocessError(str(exc)) from None
        for kernel in kernels:
            raw = _find_raw(traces_dir, kernel.raw_name, kernelslist.name)
            process_kernel(raw, traces_dir / kernel.output_name, f"traces/{raw.name}", run)
        out_name = KERNELSLIST_G if index == 0 else f"{kernelslist.name}.g"
        try:
            with _atomic_writer(traces_dir / out_name, run) as f:
                f.write("".join(line + "\n" for line in out_lines))
        except OSError as exc:
            raise PostprocessError(f"traces/{out_name}: {_reason(exc)}") from None


def check_kernelslist_g(traces_dir: Path) -> None:
    """Every kernel trace the simulator will read is a file here (what `/inputs` then serves)."""
    try:
        text = read_bounded(traces_dir / KERNELSLIST_G, KERNELSLIST_MAX_BYTES, f"traces/{KERNELSLIST_G}")
        listing = text.decode("utf-8", errors="replace")
        paths = kernel_files(listing)
    except TooLargeError as exc:
        raise PostprocessError(str(exc)) from None
    except TraceFormatError as exc:
        raise PostprocessError(f"traces/{KERNELSLIST_G} {exc}") from None
    if problem := memcpy_problem(listing):
        raise PostprocessError(f"traces/{KERNELSLIST_G} {problem}")
    if not paths:
        raise PostprocessError("traces/kernelslist.g names no kernels")
    for path in paths:
        name = path.removeprefix("traces/")
        if not (traces_dir / name).is_file():
            raise PostprocessError(f"traces/kernelslist.g names {name}, which is not in the upload")


def remove_stale_temporaries(trace_dir: Path) -> None:
    """Temporary files of a post-processor that was killed (they are never renamed into place)."""
    prefix = temporary_prefix(trace_dir)
    for tmp in prefix.parent.glob(f"{prefix.name}*"):
        tmp.unlink(missing_ok=True)


def temporary_prefix(trace_dir: Path) -> Path:
    """Where this trace's post-processor writes before renaming into place: not beside the trace's
    files (an uploaded `traces/.x.tmp-1` is a file of the trace, not ours to remove) but in the
    mirror's temporary directory, on the same filesystem."""
    temp_dir = trace_dir.parent / TRACE_TEMP_DIR_NAME
    temp_dir.mkdir(mode=0o700, exist_ok=True)
    return temp_dir / f"{trace_dir.name}.postprocess."


def postprocess_trace(trace_dir: Path, limits: Limits | None = None) -> None:
    """Make `trace_dir` runnable by Accel-Sim; raises PostprocessError with a one-line reason
    (NoSpaceError when the disk filled up), having removed every file it wrote."""
    traces_dir = trace_dir / "traces"
    # Directories too: an empty traces/ is there, it only lacks a kernel list.
    if problem := layout_problem(p.relative_to(trace_dir).as_posix() for p in trace_dir.rglob("*")):
        raise PostprocessError(problem)
    remove_stale_temporaries(trace_dir)
    run = _Run(limits or Limits(), temporary_prefix(trace_dir))
    try:
        gunzip_traceg_files(traces_dir, run)
        if not (traces_dir / KERNELSLIST_G).is_file():
            process_kernelslists(traces_dir, run)
        check_kernelslist_g(traces_dir)
    except BaseException:
        for path in run.written:  # partial output would look like a processed trace
            path.unlink(missing_ok=True)
        raise


@contextmanager
def exclusive(trace_dir: Path) -> Iterator[None]:
    """Hold the trace directory's lock: waits while another post-processor (of a server that is
    going away) still works on it."""
    fd = os.open(trace_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m cascade_server.traces.postprocess")
    parser.add_argument("trace_dir", type=Path)
    parser.add_argument("--max-ratio", type=float, default=Limits.max_ratio)
    parser.add_argument("--max-bytes", type=int, default=Limits.max_bytes)
    parser.add_argument("--timeout-s", type=float, default=0.0, help="give up after this long (0: never)")
    return parser.parse_args(argv)


def _give_up_after(seconds: float) -> None:
    """Raise PostprocessError wherever the run is after `seconds` (also while it waits for the
    lock), so it removes what it wrote on the way out, as on any other failure."""

    def alarm(signum: int, frame: object) -> None:
        raise PostprocessError(f"took longer than {seconds:g} s (CASCADE_POSTPROCESS_TIMEOUT_S)")

    if seconds > 0:
        signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        _give_up_after(args.timeout_s)
        with exclusive(args.trace_dir):
            postprocess_trace(args.trace_dir, Limits(args.max_ratio, args.max_bytes))
    except NoSpaceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_NO_SPACE
    except PostprocessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as exc:
        if exc.errno in NO_SPACE_ERRNOS:
            print(f"error: {NO_SPACE_REASON} ({exc.strerror})", file=sys.stderr)
            return EXIT_NO_SPACE
        print(f"error: post-processing crashed: {type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr)
        return EXIT_FAILED
    except Exception as exc:  # noqa: BLE001 - anything else is still a one-line trace error
        print(f"error: post-processing crashed: {type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr)
        return EXIT_FAILED
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
