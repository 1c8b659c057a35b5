"""`cascade timeline import`, without the files: a decoded profile and the trace's kernels in,
the three documents and a summary out."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cascade_core.timeline.align import map_steps
from cascade_core.timeline.formats import CorrectedTimeline, KernelMapping, RealKernel, RealTiming
from cascade_core.timeline.kineto import DEFAULT_STEP_PATTERN, parse_profile


@dataclass(frozen=True)
class ImportResult:
    timeline: CorrectedTimeline
    mapping: KernelMapping
    real_timing: RealTiming
    profile_kernels: int  # every GPU kernel in the profile
    outside_steps: int  # of those, launched outside every step
    launches: int  # kernels launched inside the steps
    mapped: int  # of those, aligned to a trace kernel
    gpu_ns: int  # measured GPU time of the steps' kernels
    mapped_gpu_ns: int  # of that, the mapped kernels'
    timed_trace_kernels: int  # trace kernels that got a real duration

    def summary_lines(self) -> list[str]:
        steps = self.timeline.steps
        kinds = sorted({s.kind for s in steps})
        lines = [
            f"steps: {len(steps)} ({', '.join(kinds)}), {self.launches} kernels launched in them"
            + (
                f"; {self.outside_steps} of the profile's {self.profile_kernels} kernels were launched "
                "outside every step"
                if self.outside_steps
                else ""
            ),
            f"kernels mapped: {self.mapped} / {self.launches} launches"
            f" ({_pct(self.mapped, self.launches)}), {self.timed_trace_kernels} / "
            f"{self.mapping.trace_kernels} trace kernels timed",
            f"GPU time covered: {self.mapped_gpu_ns / 1e6:.3f} ms / {self.gpu_ns / 1e6:.3f} ms"
            f" ({_pct(self.mapped_gpu_ns, self.gpu_ns)})",
        ]
        if self.mapping.unmapped_names:
            top = list(self.mapping.unmapped_names.items())[:3]
            lines.append(
                "unmapped (not in the trace): "
                + "; ".join(f"{n} x{c}" for n, c in top)
                + (" ..." if len(self.mapping.unmapped_names) > 3 else "")
            )
        return lines


def _pct(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "0.0%"


def import_profile(
    doc: dict[str, Any],
    trace_kernels: Sequence[tuple[int, str]],
    demangle: Callable[[str], str],
    *,
    step_pattern: str = DEFAULT_STEP_PATTERN,
    source: dict[str, Any] | None = None,
) -> ImportResult:
    """`trace_kernels`: the trace's (kernel_id, name) in kernel_id order. Raises ProfileError."""
    parsed = parse_profile(doc, step_pattern)
    timeline = parsed.timeline
    timeline.source.update(source or {})
    mapping = map_steps(timeline.steps, trace_kernels, demangle)
    durations: dict[int, list[int]] = {}
    launches = mapped = gpu_ns = mapped_gpu_ns = 0
    for step, step_map in zip(timeline.steps, mapping.steps):
        for kernel, kernel_id in zip(step.kernels, step_map.kernel_ids):
            launches += 1
            gpu_ns += kernel.duration_ns
            if kernel_id is not None:
                mapped += 1
                mapped_gpu_ns += kernel.duration_ns
                durations.setdefault(kernel_id, []).append(kernel.duration_ns)
    real = RealTiming(
        source=dict(timeline.source),
        kernels=[
            RealKernel(
                kernel_id=kernel_id,
                kernel_name=name,
                duration_ns=float(statistics.median(durations[kernel_id]))
                if kernel_id in durations
                else None,
                samples=len(durations.get(kernel_id, [])),
            )
            for kernel_id, name in trace_kernels
        ],
    )
    return ImportResult(
        timeline=timeline,
        mapping=mapping,
        real_timing=real,
        profile_kernels=parsed.kernels_total,
        outside_steps=parsed.kernels_outside_steps,
        launches=launches,
        mapped=mapped,
        gpu_ns=gpu_ns,
        mapped_gpu_ns=mapped_gpu_ns,
        timed_trace_kernels=len(durations),
    )
