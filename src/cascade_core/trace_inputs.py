"""Which files of a trace the simulator reads: `traces/kernelslist.g` and the kernel traces it
names (never the raw `kernel-N.trace` uploads, which the post-processor already turned into
`.traceg`).

The one rule for a `kernelslist.g` line, exactly as Accel-Sim's `trace_parser.cc`
(`parse_commandlist_file`) reads it: the file is split at `\\n` only (C++ `getline`), nothing is
stripped, and a line that starts with `MemcpyHtoD` is a memcpy, one that starts with `kernel` is a
kernel launch naming a trace file beside the list, and every other line (blank, `#...`,
`MemcpyDtoH,...`, `  kernel-2.traceg` with leading blanks, anything) is ignored. The check that
marks a trace ready, the kernel list read from trace headers, `GET /api/traces/{id}/inputs`, a
run's shard plan and the worker's shard lists all use it, so they agree on what a kernel is and
where it stands. Pure: text in, names out.
"""

from __future__ import annotations

from typing import Literal

KERNELSLIST = "traces/kernelslist.g"
KERNELSLIST_NAME = "kernelslist.g"
MEMCPY_PREFIX = "MemcpyHtoD"
KERNEL_PREFIX = "kernel"

LineKind = Literal["memcpy", "kernel", "ignored"]


class TraceFormatError(ValueError):
    """A trace or kernelslist that cannot be post-processed; the message is one line."""


def list_lines(kernelslist: str) -> list[str]:
    """The lines of a `kernelslist.g` as Accel-Sim reads them: split at `\\n` only, so a `\\r`
    of a Windows line end stays part of its line."""
    return kernelslist.split("\n")


def line_kind(line: str) -> LineKind:
    """What Accel-Sim makes of one line (without its `\\n`)."""
    if line.startswith(MEMCPY_PREFIX):
        return "memcpy"
    if line.startswith(KERNEL_PREFIX):
        return "kernel"
    return "ignored"


def kernel_name_problem(name: str) -> str | None:
    """Why a kernel line is not a plain file name inside the trace's folder (Accel-Sim opens
    `<the list's folder>/<line>`), or None when it is one."""
    if "/" in name or "\\" in name or name in (".", ".."):
        return "is not a file name (a kernel trace must be a file beside kernelslist.g)"
    if name == KERNELSLIST_NAME:
        return "is the list itself"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        if name.endswith("\r"):
            return "ends in a carriage return (a Windows line end), which Accel-Sim reads as part of the file name"
        return "has a control character in its name"
    if name != name.rstrip():
        return "ends in blanks, which Accel-Sim reads as part of the file name"
    return None


def kernel_names(kernelslist: str) -> list[str]:
    """The kernel trace file names a kernelslist.g names, in launch order, as file names beside
    it. Raises TraceFormatError, with a one-line message naming the line, for a kernel line that
    is not a plain file name (`kernels/x`, `kernel/../../x`: it could lead out of the trace)."""
    names: list[str] = []
    for number, line in enumerate(list_lines(kernelslist), start=1):
        if line_kind(line) != "kernel":
            continue
        if problem := kernel_name_problem(line):
            raise TraceFormatError(f"line {number}: kernel trace {line[:60]!r} {problem}")
        names.append(line)
    return names


# A memcpy larger than any GPU's memory (1 TiB): Accel-Sim would copy it byte by byte, for ever.
MAX_MEMCPY_BYTES = 1 << 40


def memcpy_problem(kernelslist: str) -> str | None:
    """A memcpy line the simulator cannot run in any time (`MemcpyHtoD,<address>,<bytes>`, a size
    past MAX_MEMCPY_BYTES or not a number), naming its line; None when there is none."""
    for number, line in enumerate(list_lines(kernelslist), start=1):
        if line_kind(line) != "memcpy":
            continue
        fields = line.strip().split(",")
        size = fields[2].strip() if len(fields) >= 3 else ""
        if not (size.isascii() and size.isdigit()) or len(size) > 16 or int(size) > MAX_MEMCPY_BYTES:
            return (
                f"line {number}: memcpy {line[:60]!r}: its size must be a number of bytes up to "
                f"{MAX_MEMCPY_BYTES:,} (more than any GPU holds)"
            )
    return None


def kernel_files(kernelslist: str) -> list[str]:
    """The kernel trace files a kernelslist.g names, in launch order, as paths inside the trace
    (`traces/...`); see kernel_names."""
    return [f"traces/{name}" for name in kernel_names(kernelslist)]
