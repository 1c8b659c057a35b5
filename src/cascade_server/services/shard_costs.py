"""A trace's expected cost per kernel, in the order its `kernelslist.g` runs them: instruction
counts from `stats.csv` / `stats_ctx_*` (the trace's `kernels`) when every kernel has one, else
the sizes of the kernel trace files."""

from __future__ import annotations

import re
from pathlib import Path

from cascade_core.models import TraceDetail
from cascade_core.shard_plan import ShardPlanError
from cascade_core.trace_inputs import TraceFormatError, kernel_names

_KERNEL_ID = re.compile(r"kernel-(\d+)\.")


def kernel_files(kernelslist: Path) -> list[str]:
    """The kernel trace files a `kernelslist.g` names, in the order Accel-Sim launches them (the
    one rule of cascade_core/trace_inputs: only lines starting with `kernel`). Raises ShardPlanError
    for a kernel line that is not a file name beside the list."""
    text = kernelslist.read_bytes().decode("utf-8", errors="replace")
    try:
        return kernel_names(text)
    except TraceFormatError as exc:
        raise ShardPlanError(f"its traces/kernelslist.g {exc}") from None


def kernel_costs(trace_dir: Path, trace: TraceDetail) -> tuple[list[int | None], str]:
    """(cost per kernel in run order, what the costs are). Blocking: call it in a thread.
    Raises ShardPlanError when the trace's kernelslist.g names a kernel that is not a file name."""
    kernelslist = trace_dir / "traces" / "kernelslist.g"
    instructions = {k.kernel_id: k.instructions for k in trace.kernels}
    if not kernelslist.is_file():  # no list to run: the trace's own kernel records
        counts = [k.instructions for k in sorted(trace.kernels, key=lambda k: k.kernel_id)]
        if not counts:
            counts = [None] * trace.kernel_count
        return counts, "instructions"
    files = kernel_files(kernelslist)
    ids = [int(m.group(1)) if (m := _KERNEL_ID.search(Path(name).name)) else None for name in files]
    by_id = [instructions.get(i) if i is not None else None for i in ids]
    if files and all(c is not None and c > 0 for c in by_id):
        return by_id, "instructions"
    sizes: list[int | None] = []
    for name in files:
        try:
            sizes.append((kernelslist.parent / name).stat().st_size)
        except OSError:
            sizes.append(None)
    return sizes, "trace sizes"
