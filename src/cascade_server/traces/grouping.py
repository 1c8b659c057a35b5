"""Pure core of the trace post-processor: Accel-Sim's `post-traces-processing`, in Python.

The NVBit tracer writes one line per warp-instruction, in execution order, prefixed with the
thread block and warp it belongs to (`tb_x tb_y tb_z warpid_tb <rest>`). Accel-Sim reads
`.traceg` files, where instructions are grouped by thread block, then by warp, without those
four columns. This module does that regrouping line for line as the C++ tool (tracer version 5,
`reference/accelsim-formats.md` section 3.2), so its output is byte-identical:

- header lines (`-...`), comments (`#...`) and blank lines are echoed in place;
- thread blocks come out in linear-id order (z, then y, then x), each with every warp of the
  block, `insts = 0` for a warp that executed nothing; thread blocks never seen are skipped;
- of each pair of `LDGSTS` lines (one per memory reference) only the second is kept.

No I/O here: `postprocess` feeds lines in and writes lines out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from cascade_core.trace_inputs import TraceFormatError, kernel_name_problem
from cascade_core.trace_limits import launch_shape_problem

_INSTRUCTION = re.compile(r"\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s(.*)\Z", re.DOTALL)
_GRID = re.compile(r"-grid dim = \((\d+),(\d+),(\d+)\)")
_BLOCK = re.compile(r"-block dim = \((\d+),(\d+),(\d+)\)")
_LINEINFO = re.compile(r"-enable lineinfo = (\d+)")


def lines_like_getline(text_lines: Iterable[str]) -> Iterator[str]:
    """Lines without their newline, as the C++ tool's `while (!eof) getline(...)` sees them:
    a file that ends with a newline (or is empty) yields one extra empty line at the end."""
    ends_with_newline = True
    for raw in text_lines:
        ends_with_newline = raw.endswith("\n")
        yield raw[:-1] if ends_with_newline else raw
    if ends_with_newline:
        yield ""


@dataclass
class _ThreadBlock:
    coords: tuple[int, int, int]
    warps: list[list[str]]
    # Per warp: True means the next LDGSTS line is the one to drop (the tool starts at true).
    drop_next_ldgsts: list[bool] = field(default_factory=list)


def _opcode(rest: str, lineinfo: bool) -> str | None:
    tokens = rest.split()
    skip = 3 if lineinfo else 2  # [line_num] PC mask
    try:
        dest_num = int(tokens[skip])
        return tokens[skip + 1 + dest_num]
    except (IndexError, ValueError):
        return None


def group_raw_trace(lines: Iterable[str], source: str = "trace") -> Iterator[str]:
    """Regroup a raw kernel trace (lines without newlines, see `lines_like_getline`) into the
    `.traceg` layout. Yields output lines without newlines. Raises `TraceFormatError` naming
    `source` and the line number for anything the simulator could not use."""
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    lineinfo = False
    warps_per_tb = 0
    blocks: dict[int, _ThreadBlock] = {}
    interned: dict[str, str] = {}  # the traces repeat a lot; keep one copy of each line

    for number, line in enumerate(lines, start=1):
        if not line or line[0] == "#":
            yield line
            continue
        if line[0] == "-":
            if m := _GRID.match(line):
                grid = (int(m[1]), int(m[2]), int(m[3]))
            elif m := _BLOCK.match(line):
                block = (int(m[1]), int(m[2]), int(m[3]))
                warps_per_tb = -(-(block[0] * block[1] * block[2]) // 32)
            elif m := _LINEINFO.match(line):
                lineinfo = int(m[1]) != 0
            if grid is not None and block is not None and (problem := launch_shape_problem(grid, block)):
                raise TraceFormatError(f"{source} line {number}: {problem}")
            yield line
            continue

        # Fast path for the tracer's single-space lines; the regex handles anything else.
        fields = line.split(" ", 4)
        try:
            x, y, z, warp = int(fields[0]), int(fields[1]), int(fields[2]), int(fields[3])
            rest = fields[4]
        except (ValueError, IndexError):
            m = _INSTRUCTION.match(line)
            if m is None:
                raise TraceFormatError(
                    f"{source} line {number}: expected 'tb_x tb_y tb_z warp ...', got {line[:60]!r}"
                ) from None
            x, y, z, warp, rest = int(m[1]), int(m[2]), int(m[3]), int(m[4]), m[5]
        if grid is None or block is None:
            raise TraceFormatError(
                f"{source} line {number}: instruction before the '-grid dim' and '-block dim' header"
            )
        if x < 0 or y < 0 or z < 0 or warp < 0:
            raise TraceFormatError(f"{source} line {number}: negative thread block or warp id")
        if x >= grid[0] or y >= grid[1] or z >= grid[2]:
            raise TraceFormatError(
                f"{source} line {number}: thread block {x},{y},{z} is outside grid "
                f"({grid[0]},{grid[1]},{grid[2]})"
            )
        if warp >= warps_per_tb:
            raise TraceFormatError(
                f"{source} line {number}: warp {warp} is outside a block of {warps_per_tb} warps"
            )
        rest = interned.setdefault(rest, rest)
        tb_id = z * grid[1] * grid[0] + y * grid[0] + x
        tb = blocks.get(tb_id)
        if tb is None:
            tb = blocks[tb_id] = _ThreadBlock(
                (x, y, z), [[] for _ in range(warps_per_tb)], [True] * warps_per_tb
            )
        if "LDGSTS" in rest and "LDGSTS" in (_opcode(rest, lineinfo) or ""):
            # One LDGSTS is traced twice (global and shared address); keep the second.
            if not tb.drop_next_ldgsts[warp]:
                tb.warps[warp].append(rest)
            tb.drop_next_ldgsts[warp] = not tb.drop_next_ldgsts[warp]
        else:
            tb.warps[warp].append(rest)

    for tb_id in sorted(blocks):
        tb = blocks[tb_id]
        yield ""
        yield "#BEGIN_TB"
        yield ""
        yield "thread block = {},{},{}".format(*tb.coords)
        for index, instructions in enumerate(tb.warps):
            yield ""
            yield f"warp = {index}"
            yield f"insts = {len(instructions)}"
            yield from instructions
        yield ""
        yield "#END_TB"


@dataclass(frozen=True)
class KernelEntry:
    """One kernel line of a kernelslist: the raw trace it names and the `.traceg` it becomes."""

    raw_name: str
    output_name: str


def processed_name(raw_name: str) -> str:
    """`kernel-1.trace` -> `kernel-1.traceg`, `kernel-1.trace.xz` -> `kernel-1.traceg.xz`
    (as the C++ tool); a gzipped `kernel-1.trace.gz` becomes a plain `kernel-1.traceg`."""
    if raw_name.endswith(".xz"):
        return raw_name[:-3] + "g.xz"
    if raw_name.endswith(".gz"):
        return raw_name[:-3] + "g"
    return raw_name + "g"


def rewrite_kernelslist(
    lines: Iterable[str], source: str = "kernelslist"
) -> tuple[list[str], list[KernelEntry]]:
    """The `kernelslist.g` lines for a raw `kernelslist`, and the kernels it names in order.
    `Memcpy...` lines are copied, `kernel...` lines renamed, blank lines dropped; anything else
    is an error, as in the C++ tool (`Undefined command`)."""
    out: list[str] = []
    kernels: list[KernelEntry] = []
    for number, line in enumerate(lines, start=1):
        line = line.rstrip("\r\n")
        if not line:
            continue
        if line.startswith("Memcpy"):
            out.append(line)
        elif line.startswith("kernel"):
            if problem := kernel_name_problem(line):  # the rule kernelslist.g is read by
                raise TraceFormatError(f"{source} line {number}: kernel trace {line[:60]!r} {problem}")
            entry = KernelEntry(line, processed_name(line))
            kernels.append(entry)
            out.append(entry.output_name)
        else:
            raise TraceFormatError(f"{source} line {number}: undefined command {line[:60]!r}")
    return out, kernels
