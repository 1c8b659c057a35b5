"""A trace's kernel launches (`KernelLaunch`), from the tracer's `stats.csv` / `stats_ctx_*` files,
or, when a tracer wrote none, from the headers of the kernel traces `kernelslist.g` names.

`parse_stats` and `parse_trace_header` are pure; `read_kernels` finds and reads the files."""

from __future__ import annotations

import re
from pathlib import Path

from cascade_core.bounded_read import (
    DECOMPRESS_ERRORS,
    MAX_LINE_BYTES,
    MiB,
    TooLargeError,
    bounded_text_lines,
    open_bounded,
    read_bounded,
)
from cascade_core.models import KernelLaunch
from cascade_core.trace_inputs import TraceFormatError, kernel_files
from cascade_core.trace_limits import (
    HEADER_MAX_LINES,
    KERNELSLIST_MAX_BYTES,
    STATS_MAX_BYTES,
    launch_shape_problem,
)


class KernelStatsError(ValueError):
    """A stats file that cannot be read; the message is one line."""


_KERNEL_ID = re.compile(r"kernel-(\d+)")
_HEADER = {
    "name": re.compile(r"-kernel name = (\S+)"),
    "id": re.compile(r"-kernel id = (\d+)"),
    "grid": re.compile(r"-grid dim = \((\d+),(\d+),(\d+)\)"),
    "block": re.compile(r"-block dim = \((\d+),(\d+),(\d+)\)"),
}


def _kernel_id(field: str) -> int:
    # The tracer writes the trace file name ("kernel-3.trace", "kernel-3-ctx_0x...trace.xz");
    # other tools write the number.
    if m := _KERNEL_ID.match(field):
        return int(m[1])
    return int(field)


def parse_stats(text: str, source: str = "stats.csv") -> list[KernelLaunch]:
    """Rows of a tracer stats file. The tracer writes a row in two steps (at launch, then the
    instruction counts at exit), so a row without counts is a kernel whose trace was cut short:
    `instructions` is None. Names may be mangled or demangled (with commas, then a header row
    must say how many columns there are)."""
    kernels: list[KernelLaunch] = []
    columns = 0  # from the header row, so that a demangled name's commas stay in the name
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if line.lstrip().lower().startswith("kernel id"):
            columns = line.count(",") + 1
            continue
        fields = [f.strip() for f in line.split(",")]
        if columns and len(fields) > columns:
            first, rest = line.split(",", 1)
            fields = [first.strip(), *(f.strip() for f in rest.rsplit(",", columns - 2))]
        try:
            if len(fields) < 10:
                raise ValueError(f"{len(fields)} fields")
            total = fields[10] if len(fields) > 10 else ""
            kernels.append(
                KernelLaunch(
                    kernel_id=_kernel_id(fields[0]),
                    name=fields[1],
                    grid=(int(fields[2]), int(fields[3]), int(fields[4])),
                    block=(int(fields[6]), int(fields[7]), int(fields[8])),
                    instructions=int(total) if total else None,
                )
            )
        except ValueError:
            raise KernelStatsError(
                f"{source} line {number}: expected 'kernel id, name, grid x/y/z, #blocks, "
                f"block x/y/z, #threads, total_insts, ...', got {line[:60]!r}"
            ) from None
    return kernels


def parse_trace_header(lines: list[str]) -> KernelLaunch | None:
    """A KernelLaunch from the `-kernel name/id/grid dim/block dim` header of one kernel trace."""
    found: dict[str, re.Match[str]] = {}
    for line in lines:
        for key, pattern in _HEADER.items():
            if key not in found and (m := pattern.match(line)):
                found[key] = m
    if len(found) < len(_HEADER):
        return None
    g, b = found["grid"], found["block"]
    return KernelLaunch(
        kernel_id=int(found["id"][1]),
        name=found["name"][1],
        grid=(int(g[1]), int(g[2]), int(g[3])),
        block=(int(b[1]), int(b[2]), int(b[3])),
        instructions=None,
    )


def stats_files(trace_dir: Path) -> list[Path]:
    """The tracer's stats files anywhere in the trace: `stats_ctx_0x...` per CUDA context (newer
    tracers) or one `stats.csv`."""
    found = [p for p in trace_dir.rglob("stats_ctx_*") if p.is_file()]
    found += [p for p in trace_dir.rglob("stats.csv") if p.is_file()]
    return sorted(found)


def header_lines(path: Path, source: str, limit: int = HEADER_MAX_LINES) -> list[str]:
    """The lines before the first instruction, each bounded (`bounded_read`): a header line of a
    GiB fails the trace at its first MiB."""
    # Bounded in all, too: `limit` lines of at most MAX_LINE_BYTES each.
    with open_bounded(path, limit * MAX_LINE_BYTES, source) as f:
        lines = []
        for line in bounded_text_lines(f, source, errors="replace"):
            if line.startswith("#"):
                break
            lines.append(line.rstrip("\n"))
            if len(lines) >= limit:
                break
        return lines


def _launch_from_header(path: Path, source: str) -> KernelLaunch | None:
    try:
        launch = parse_trace_header(header_lines(path, source))
    except TooLargeError as exc:
        raise KernelStatsError(str(exc)) from None
    except DECOMPRESS_ERRORS as exc:
        raise KernelStatsError(f"{source}: corrupt compressed data ({exc or type(exc).__name__})") from None
    if launch is not None and (problem := launch_shape_problem(launch.grid, launch.block)):
        raise KernelStatsError(f"{source}: {problem}")
    return launch


_INSTS = re.compile(rb"\ninsts = (\d+)")
_READ = 4 * MiB
# Counting reads the whole kernel trace, streaming: bounded in time by the file, not in memory.
KERNEL_TRACE_MAX_BYTES = 1024 * 1024 * MiB


def count_instructions(path: Path, source: str) -> int:
    """A kernel trace's warp instructions: the sum of its warps' `insts = N` lines (what a
    tracer's stats.csv gives as total_insts)."""
    total, tail = 0, b"\n"
    with open_bounded(path, KERNEL_TRACE_MAX_BYTES, source) as stream:
        while block := stream.read(_READ):
            data = tail + block
            cut = data.rfind(b"\n")  # a line cut at the block's end is read with the next block
            total += sum(int(m) for m in _INSTS.findall(data, 0, cut + 1 if cut > 0 else 0))
            tail = data[cut:] if cut >= 0 else data
        total += sum(int(m) for m in _INSTS.findall(tail + b"\n"))
    return total


def listed_kernels(trace_dir: Path) -> list[str] | None:
    """The kernel trace files `traces/kernelslist.g` names, in launch order (`traces/...`): what
    the simulator runs. None when there is no list to read."""
    kernelslist = trace_dir / "traces" / "kernelslist.g"
    if not kernelslist.is_file():
        return None
    try:
        listing = read_bounded(kernelslist, KERNELSLIST_MAX_BYTES, "traces/kernelslist.g")
        return kernel_files(listing.decode("utf-8", errors="replace"))
    except TooLargeError as exc:
        raise KernelStatsError(str(exc)) from None
    except TraceFormatError:
        return []  # such a trace never becomes ready (check_kernelslist_g)


def kernel_id_of(name: str) -> int | None:
    """The kernel id in a kernel trace's file name (`traces/kernel-12.traceg.xz` -> 12), or None."""
    match = _KERNEL_ID.match(name.rsplit("/", 1)[-1])
    return int(match[1]) if match else None


def listed_ids(names: list[str]) -> set[int] | None:
    """The kernel ids of the listed files (`traces/kernel-12.traceg.xz` -> 12); None when a name
    carries none, so a stats file cannot be matched to the list."""
    ids = set()
    for name in names:
        match = _KERNEL_ID.match(name.rsplit("/", 1)[-1])
        if match is None:
            return None
        ids.add(int(match[1]))
    return ids


def read_kernels(trace_dir: Path) -> list[KernelLaunch]:
    """Every kernel launch of a processed trace that its kernelslist.g names, by kernel_id
    (stable for repeated ids). A tracer's stats file may list kernels whose traces the list does
    not name (a trace cut to some kernels): the simulator never runs those, so they are left out."""
    files = stats_files(trace_dir)
    kernels: list[KernelLaunch] = []
    listed = listed_kernels(trace_dir)
    if files:
        for path in files:
            source = str(path.relative_to(trace_dir))
            try:
                text = read_bounded(path, STATS_MAX_BYTES, source).decode("utf-8", errors="replace")
            except TooLargeError as exc:
                raise KernelStatsError(str(exc)) from None
            kernels += parse_stats(text, source)
        ids = listed_ids(listed) if listed is not None else None
        if ids is not None:
            kernels = [k for k in kernels if k.kernel_id in ids]
    else:
        for name in listed or []:
            path = trace_dir / name
            if path.is_file() and (launch := _launch_from_header(path, name)):
                # no stats file: the instructions counted from the trace (sampling needs them)
                try:
                    counted = count_instructions(path, name)
                except DECOMPRESS_ERRORS as exc:
                    raise KernelStatsError(
                        f"{name}: corrupt compressed data ({exc or type(exc).__name__})"
                    ) from None
                kernels.append(launch.model_copy(update={"instructions": counted}))
    return sorted(kernels, key=lambda k: k.kernel_id)
