"""Each measured step's kernel launches aligned to the trace's kernels, in order and by name.

NVBit traces every launch of the traced run, usually one step, in launch order; the profiler saw
the same launches (and others: its steps may run kernels the traced run did not). Aligning the
two name sequences (longest matching runs, `difflib`) maps a launch to a trace kernel only when
its neighbours agree too, so a repeated kernel name maps to its own position.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Callable, Sequence

from cascade_core.timeline.formats import KernelMapping, MeasuredStep, StepMapping

_SPACES = re.compile(r"\s+")
_SPACE_AROUND = re.compile(r"\s*([<>(),*&])\s*")


def name_key(name: str, demangle: Callable[[str], str]) -> str:
    """One spelling for a kernel name whether it is mangled or not: demangled, without the
    whitespace demanglers disagree on (CUPTI writes `> >`, c++filt `>>` in places)."""
    readable = demangle(name.strip())
    return _SPACE_AROUND.sub(r"\1", _SPACES.sub(" ", readable)).strip()


def align_names(launches: Sequence[str], trace: Sequence[str]) -> list[int | None]:
    """For each launch, the index in `trace` it aligns to, or None."""
    matcher = difflib.SequenceMatcher(None, launches, trace, autojunk=False)
    mapped: list[int | None] = [None] * len(launches)
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            mapped[block.a + offset] = block.b + offset
    return mapped


def map_steps(
    steps: Sequence[MeasuredStep],
    trace_kernels: Sequence[tuple[int, str]],
    demangle: Callable[[str], str],
) -> KernelMapping:
    """`trace_kernels` is the trace's (kernel_id, name) in kernel_id order."""
    keys_of: dict[str, str] = {}  # a model launches a few hundred distinct kernels many times

    def key(name: str) -> str:
        if name not in keys_of:
            keys_of[name] = name_key(name, demangle)
        return keys_of[name]

    trace_keys = [key(name) for _, name in trace_kernels]
    ids = [kernel_id for kernel_id, _ in trace_kernels]
    unmapped: Counter[str] = Counter()
    mappings = []
    for step in steps:
        keys = [key(k.name) for k in step.kernels]
        positions = align_names(keys, trace_keys)
        kernel_ids = [ids[p] if p is not None else None for p in positions]
        unmapped.update(key for key, p in zip(keys, positions) if p is None)
        mapped = sum(p is not None for p in positions)
        mappings.append(
            StepMapping(
                index=step.index,
                name=step.name,
                kernel_ids=kernel_ids,
                mapped=mapped,
                unmapped=len(positions) - mapped,
            )
        )
    return KernelMapping(
        trace_kernels=len(trace_kernels), steps=mappings, unmapped_names=dict(unmapped.most_common())
    )
