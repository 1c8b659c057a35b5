"""`cascade simulate`: each measured step replayed with the sim's kernel times.

The `scaled-gaps` host model: a kernel keeps its stream, its order, and the idle gap the GPU
had on that stream before it (the host launching, syncing, doing CPU work), scaled by
`gap_scale` (1.0 unless fitted); its duration becomes the sim's `sim_time_ns` when the launch is
mapped to a trace kernel the sim finished, else stays the measured one. Streams run side by side
as they did, so their overlap is kept. A step ends when its last kernel does, plus the host time
the CPU spent after the GPU's last kernel (scaled too); a step with no kernel lasts its CPU wall.
Replayed with the measured durations, a step reproduces its measured wall and GPU busy time.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cascade_core.models import KernelStat
from cascade_core.timeline.formats import CorrectedTimeline, KernelMapping, MeasuredStep
from cascade_core.timeline.intervals import union_length

HOST_MODEL = "scaled-gaps"
REQUEST_ASSUMPTION = "one request per prefill and the decode steps after it; queue + prefill/decode walls"


@dataclass(frozen=True)
class StepTimes:
    """A step's wall and GPU busy time (measured or simulated), the inputs of requests/means."""

    index: int
    kind: str
    start_ns: float
    wall_ns: float
    gpu_busy_ns: float


def sim_kernel_times(kernels: Iterable[KernelStat]) -> dict[int, float]:
    """Trace kernel_id -> the sim's time for it. Accel-Sim's `kernel_launch_uid` is the 1-based
    launch number, the tracer's `kernel-N` id; without it, the order of completion stands in."""
    times = {}
    for stat in kernels:
        if stat.sim_time_ns is not None:
            times[stat.kernel_launch_uid if stat.kernel_launch_uid is not None else stat.kernel_index + 1] = (
                stat.sim_time_ns
            )
    return times


def measured_times(step: MeasuredStep) -> StepTimes:
    """The measured step: from its CPU start until both the CPU and its last kernel are done."""
    end = step.cpu_start_ns + step.cpu_wall_ns
    end = max([end, *(k.start_ns + k.duration_ns for k in step.kernels)])
    busy = union_length((k.start_ns, k.start_ns + k.duration_ns) for k in step.kernels)
    return StepTimes(step.index, step.kind, step.cpu_start_ns, end - step.cpu_start_ns, busy)


def replay_step(
    step: MeasuredStep, kernel_ids: Sequence[int | None], sim_ns: Mapping[int, float], gap_scale: float
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the simulated step, its coverage)."""
    origin = step.cpu_start_ns
    measured_end: dict[int, float] = {}  # per stream, where the measured stream was free again
    simulated_end: dict[int, float] = {}
    kernels: list[dict[str, Any]] = []
    intervals: list[tuple[float, float]] = []
    covered = measured_total = 0.0
    simulated = 0
    measured_gpu_end = origin
    for kernel, kernel_id in zip(step.kernels, kernel_ids):
        previous = measured_end.get(kernel.stream, origin)
        gap = max(0.0, kernel.start_ns - previous)
        start = simulated_end.get(kernel.stream, origin) + gap * gap_scale
        time = sim_ns.get(kernel_id) if kernel_id is not None else None
        duration = time if time is not None else float(kernel.duration_ns)
        measured_total += kernel.duration_ns
        if time is not None:
            simulated += 1
            covered += kernel.duration_ns
        measured_end[kernel.stream] = max(previous, kernel.start_ns + kernel.duration_ns)
        simulated_end[kernel.stream] = max(simulated_end.get(kernel.stream, origin), start + duration)
        measured_gpu_end = max(measured_gpu_end, kernel.start_ns + kernel.duration_ns)
        intervals.append((start - origin, start - origin + duration))
        kernels.append(
            {
                "name": kernel.name,
                "kernel_id": kernel_id,
                "stream": kernel.stream,
                "start_ns": start - origin,
                "duration_ns": duration,
                "measured_ns": kernel.duration_ns,
                "simulated": time is not None,
            }
        )
    host_tail = max(0.0, origin + step.cpu_wall_ns - measured_gpu_end)
    if kernels:
        wall = max(simulated_end.values()) - origin + host_tail * gap_scale
    else:
        wall = step.cpu_wall_ns * gap_scale
    busy = union_length(intervals)
    simulated_step = {
        "index": step.index,
        "name": step.name,
        "kind": step.kind,
        "wall_ns": wall,
        "gpu_busy_ns": busy,
        "kernel_count": len(kernels),
        "simulated_kernels": simulated,
        "kernels": kernels,
    }
    coverage = {
        "index": step.index,
        "kernels": len(kernels),
        "simulated_kernels": simulated,
        "kernel_fraction": simulated / len(kernels) if kernels else 0,
        "gpu_time_fraction": covered / measured_total if measured_total else 0,
        "measured_gpu_ns": measured_total,
        "covered_measured_gpu_ns": covered,
    }
    return simulated_step, coverage


def idle_before(timeline: CorrectedTimeline) -> dict[int, float]:
    """Per step, the measured time between the previous step's end and its start (0 when the
    previous step's kernels ran into it): what a request waits in the queue."""
    gaps: dict[int, float] = {}
    previous_end: float | None = None
    for step in timeline.steps:
        times = measured_times(step)
        gaps[step.index] = max(0.0, step.cpu_start_ns - previous_end) if previous_end is not None else 0.0
        previous_end = times.start_ns + times.wall_ns
    return gaps


def requests(
    steps: Sequence[StepTimes], idle: Mapping[int, float], gap_scale: float = 1.0
) -> list[dict[str, Any]]:
    """For prefill/decode traces: one request per prefill and the decode steps after it, waiting
    the host's idle time before the prefill (`idle`, scaled) in the queue; `[]` for other traces."""
    found: list[dict[str, Any]] = []
    for step in steps:
        if step.kind == "prefill":
            found.append(
                {
                    "index": len(found),
                    "steps": [],
                    "queue_ns": idle.get(step.index, 0.0) * gap_scale,
                    "prefill_wall_ns": 0.0,
                    "decode_wall_ns": 0.0,
                    "decode_steps": 0,
                    "gpu_busy_ns": 0.0,
                }
            )
        if step.kind in ("prefill", "decode") and found:
            request = found[-1]
            request["steps"].append(step.index)
            request[f"{step.kind}_wall_ns"] += step.wall_ns
            request["decode_steps"] += step.kind == "decode"
            request["gpu_busy_ns"] += step.gpu_busy_ns
    for request in found:
        request["wall_ns"] = request["queue_ns"] + request["prefill_wall_ns"] + request["decode_wall_ns"]
    return found


def per_kind(steps: Sequence[StepTimes]) -> dict[str, dict[str, float]]:
    """Per step kind: how many steps and their mean wall and GPU busy time."""
    kinds: dict[str, list[StepTimes]] = {}
    for step in steps:
        kinds.setdefault(step.kind, []).append(step)
    return {
        kind: {
            "count": len(group),
            "wall_ns": statistics.fmean(s.wall_ns for s in group),
            "gpu_busy_ns": statistics.fmean(s.gpu_busy_ns for s in group),
        }
        for kind, group in kinds.items()
    }


def simulate(
    timeline: CorrectedTimeline,
    mapping: KernelMapping,
    sim_ns: Mapping[int, float],
    *,
    gap_scale: float = 1.0,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """simulated_timeline.json. `sim_ns`: trace kernel_id -> simulated ns (`sim_kernel_times`)."""
    ids_of = {m.index: m.kernel_ids for m in mapping.steps}
    steps, coverages, times = [], [], []
    for step in timeline.steps:
        ids = ids_of.get(step.index, [])
        ids = list(ids) + [None] * (len(step.kernels) - len(ids))
        simulated_step, coverage = replay_step(step, ids, sim_ns, gap_scale)
        steps.append(simulated_step)
        coverages.append(coverage)
        times.append(
            StepTimes(
                step.index,
                step.kind,
                step.cpu_start_ns,
                simulated_step["wall_ns"],
                simulated_step["gpu_busy_ns"],
            )
        )
    kernels = sum(c["kernels"] for c in coverages)
    simulated_kernels = sum(c["simulated_kernels"] for c in coverages)
    measured = float(sum(c["measured_gpu_ns"] for c in coverages))
    covered = float(sum(c["covered_measured_gpu_ns"] for c in coverages))
    coverage = {
        "kernels": kernels,
        "simulated_kernels": simulated_kernels,
        "kernel_fraction": simulated_kernels / kernels if kernels else 0,
        "gpu_time_fraction": covered / measured if measured else 0,
        "measured_gpu_ns": measured,
        "covered_measured_gpu_ns": covered,
        "unmodeled_gpu_ns": measured - covered,
        "steps": [
            {
                k: c[k]
                for k in ("index", "kernels", "simulated_kernels", "kernel_fraction", "gpu_time_fraction")
            }
            for c in coverages
        ],
    }
    return {
        "meta": dict(meta or {}),
        "steps": steps,
        "requests": requests(times, idle_before(timeline), gap_scale),
        "summary": {
            "simulation": {
                "host_model": HOST_MODEL,
                "host_fit": {"gap_scale": gap_scale},
                "coverage": coverage,
                "request_assumption": REQUEST_ASSUMPTION,
            },
            "per_kind": per_kind(times),
        },
    }
