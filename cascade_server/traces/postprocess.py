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
"""

from __future__ import annotations

import gzip
import lzma
import os
import shutil
import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from .grouping import (
    TraceFormatError,
    group_raw_trace,
    kernelslist_kernel_names,
    lines_like_getline,
    rewrite_kernelslist,
)

KERNELSLIST_G = "kernelslist.g"


class PostprocessError(Exception):
    """Why a trace could not be post-processed; the message is one line."""


def _open_text(path: Path) -> IO[str]:
    if path.name.endswith(".xz"):
        return lzma.open(path, "rt", encoding="utf-8")
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


@contextmanager
def _atomic_writer(path: Path, binary: bool = False) -> Iterator[IO]:
    """Write to a temp file beside `path` and rename it into place only when complete, so a
    crash never leaves a half-written trace that looks finished."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        if path.name.endswith(".xz") and not binary:
            f: IO[Any] = lzma.open(tmp, "wt", encoding="utf-8", preset=1)  # as the tool's `xz -1`
        else:
            f = open(tmp, "wb" if binary else "w", encoding=None if binary else "utf-8")
        with f:
            yield f
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


_READ_ERRORS = (OSError, EOFError, lzma.LZMAError, zlib.error, UnicodeDecodeError)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "not text (undecodable bytes)"
    if isinstance(exc, (lzma.LZMAError, zlib.error, gzip.BadGzipFile, EOFError)):
        return f"corrupt compressed data ({exc or type(exc).__name__})"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def gunzip_traceg_files(traces_dir: Path) -> None:
    for gz in sorted(traces_dir.rglob("*.traceg.gz")):
        target = gz.with_name(gz.name[: -len(".gz")])
        if target.is_file():
            continue
        try:
            with gzip.open(gz, "rb") as src, _atomic_writer(target, binary=True) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        except _READ_ERRORS as exc:
            raise PostprocessError(f"traces/{gz.relative_to(traces_dir)}: {_reason(exc)}") from None


def process_kernel(raw: Path, output: Path, source: str) -> None:
    """Regroup one raw kernel trace into its `.traceg`."""
    try:
        with _open_text(raw) as src, _atomic_writer(output) as dst:
            for line in group_raw_trace(lines_like_getline(src), source):
                dst.write(line)
                dst.write("\n")
    except TraceFormatError as exc:
        raise PostprocessError(str(exc)) from None
    except _READ_ERRORS as exc:
        raise PostprocessError(f"{source}: {_reason(exc)}") from None


def _find_raw(traces_dir: Path, name: str, kernelslist: str) -> Path:
    for candidate in (name, f"{name}.xz", f"{name}.gz"):
        path = traces_dir / candidate
        if path.is_file():
            return path
    raise PostprocessError(f"traces/{kernelslist} names {name}, which is not in the upload")


def process_kernelslists(traces_dir: Path) -> None:
    lists = sorted(
        p for p in traces_dir.iterdir()
        if p.is_file() and "kernelslist" in p.name and not p.name.endswith(".g")
        and not p.name.startswith(".")
    )
    if not lists:
        raise PostprocessError("the upload has neither traces/kernelslist.g nor a raw traces/kernelslist")
    # kernelslist.g is written last: it is what marks the trace as processed.
    for index, kernelslist in reversed(list(enumerate(lists))):
        try:
            text = kernelslist.read_text(encoding="utf-8")
        except _READ_ERRORS as exc:
            raise PostprocessError(f"traces/{kernelslist.name}: {_reason(exc)}") from None
        try:
            out_lines, kernels = rewrite_kernelslist(text.splitlines(), f"traces/{kernelslist.name}")
        except TraceFormatError as exc:
            raise PostprocessError(str(exc)) from None
        for kernel in kernels:
            raw = _find_raw(traces_dir, kernel.raw_name, kernelslist.name)
            process_kernel(raw, traces_dir / kernel.output_name, f"traces/{raw.name}")
        out_name = KERNELSLIST_G if index == 0 else f"{kernelslist.name}.g"
        with _atomic_writer(traces_dir / out_name) as f:
            f.write("".join(line + "\n" for line in out_lines))


def check_kernelslist_g(traces_dir: Path) -> None:
    names = kernelslist_kernel_names(
        (traces_dir / KERNELSLIST_G).read_text(encoding="utf-8", errors="replace").splitlines()
    )
    if not names:
        raise PostprocessError("traces/kernelslist.g names no kernels")
    for name in names:
        if not (traces_dir / name).is_file():
            raise PostprocessError(f"traces/kernelslist.g names {name}, which is not in the upload")


def postprocess_trace(trace_dir: Path) -> None:
    """Make `trace_dir` runnable by Accel-Sim; raises PostprocessError with a one-line reason."""
    traces_dir = trace_dir / "traces"
    if not traces_dir.is_dir():
        raise PostprocessError("the upload has no traces/ directory")
    gunzip_traceg_files(traces_dir)
    if not (traces_dir / KERNELSLIST_G).is_file():
        process_kernelslists(traces_dir)
    check_kernelslist_g(traces_dir)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m cascade_server.traces.postprocess TRACE_DIR", file=sys.stderr)
        return 2
    try:
        postprocess_trace(Path(args[0]))
    except PostprocessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - anything else is still a one-line trace error
        print(f"error: post-processing crashed: {type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
