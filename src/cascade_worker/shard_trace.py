"""A shard's own `kernelslist.g`: every memcpy of the trace, its warm-up kernels, then its range.

Accel-Sim reads the kernels a `kernelslist.g` names relative to the list's own folder, so the
shard's list goes into the sim's scratch directory next to a symbolic link per kernel trace it
names. The trace itself is never copied or changed.

What a line is follows the one rule Accel-Sim's parser has (`shared/trace_inputs`): a line
starting with `MemcpyHtoD` is a memcpy, kept where it stood, byte for byte (so every address is
valid); one starting with `kernel` is a kernel, kept only inside the shard's warm-up and range;
every other line (`MemcpyDtoH,...`, comments, blanks) Accel-Sim ignores, so the shard's list
leaves it out. Only kernel lines are linked, and only when they are plain file names beside the
trace's list: nothing is ever made outside the scratch directory.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from cascade_core.models import ShardInfo
from cascade_core.trace_inputs import (
    KERNELSLIST_NAME,
    TraceFormatError,
    kernel_names,
    line_kind,
    list_lines,
)

SHARD_LIST = KERNELSLIST_NAME


def shard_lines(lines: Sequence[str], start: int, last: int) -> list[str]:
    """The trace's list for kernels `start`..`last` (0-based positions among its kernel lines,
    inclusive): every memcpy line where it stood, and only those kernels. Pure."""
    out: list[str] = []
    position = 0
    for line in lines:
        kind = line_kind(line)
        if kind == "kernel":
            if start <= position <= last:
                out.append(line)
            position += 1
        elif kind == "memcpy":
            out.append(line)
    return out


def kernel_count(lines: Sequence[str]) -> int:
    return sum(1 for line in lines if line_kind(line) == "kernel")


def write_shard_list(trace_list: Path, shard: ShardInfo, dest: Path) -> Path:
    """Write the shard's `kernelslist.g` into `dest` (with links to the kernel traces it names)
    and return its path. Raises ValueError when the trace has fewer kernels than the shard needs,
    or names a kernel that is not a plain file name beside its list (saying which line)."""
    # bytes as Accel-Sim reads them: no newline translation, any byte kept
    text = trace_list.read_bytes().decode("utf-8", errors="surrogateescape")
    try:
        names = kernel_names(text)
    except TraceFormatError as exc:
        raise ValueError(f"{trace_list} {exc}") from None
    if shard.kernel_last >= len(names):
        raise ValueError(
            f"the shard owns kernels up to position {shard.kernel_last}, "
            f"but {trace_list} lists {len(names)} kernels"
        )
    start = shard.kernel_first - shard.warmup_kernels
    chosen = shard_lines(list_lines(text), start, shard.kernel_last)
    dest.mkdir(parents=True, exist_ok=True)
    source = trace_list.parent.resolve()
    for name in names[max(0, start) : shard.kernel_last + 1]:
        link = dest / name
        assert link.parent == dest, name  # kernel_names allows plain file names only
        if not link.is_symlink():
            os.symlink(source / name, link)
    out = dest / SHARD_LIST
    out.write_bytes(("\n".join(chosen) + "\n").encode("utf-8", errors="surrogateescape"))
    return out


def describe(shard: ShardInfo) -> str:
    """The line the worker puts at the top of the sim's log (kernels as 1-based trace positions)."""
    first, last = shard.kernel_first + 1, shard.kernel_last + 1
    owned = f"kernel {first}" if first == last else f"kernels {first}-{last}"
    if shard.warmup_kernels:
        w_first, w_last = shard.kernel_first - shard.warmup_kernels + 1, shard.kernel_first
        warm = f"kernel {w_first}" if w_first == w_last else f"kernels {w_first}-{w_last}"
        tail = f", after warm-up {warm}, whose stats are this sim's own, not the run's"
    else:
        tail = ", with no warm-up"
    return f"[cascade] shard {shard.index + 1} of {shard.count}: {owned} of the trace{tail}"
