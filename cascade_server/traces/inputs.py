"""Which files of a trace the simulator reads: `traces/kernelslist.g` and the kernel traces it
names (never the raw `kernel-N.trace` uploads, which the post-processor already turned into
`.traceg`). The one reading of `kernelslist.g`: the check that marks a trace ready, the kernel
list read from trace headers and `GET /api/traces/{id}/inputs` all use it, so they agree.
Pure: text in, names out."""

from __future__ import annotations

from .grouping import TraceFormatError

KERNELSLIST = "traces/kernelslist.g"


def kernel_files(kernelslist: str) -> list[str]:
    """The kernel trace files a kernelslist.g names, in launch order, as paths inside the trace
    (`traces/...`). As Accel-Sim's trace_parser.cc: a line starting with `kernel` names a
    kernel trace beside kernelslist.g; every other line (`MemcpyHtoD,0x...,256`, a comment, a
    blank) names no file. Raises TraceFormatError for a kernel line that is a path (`kernels/x`,
    which could lead out of the trace), with a one-line message."""
    names: list[str] = []
    for number, line in enumerate(kernelslist.splitlines(), start=1):
        name = line.strip()
        if not name.startswith("kernel"):
            continue
        if "/" in name or "\\" in name:
            raise TraceFormatError(f"line {number}: kernel trace {name[:60]!r} is not a file name")
        names.append(f"traces/{name}")
    return names
