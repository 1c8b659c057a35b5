"""`cascade compare`: a simulated timeline (`cascade simulate`'s output) against the measured
steps, per step and per request, with the error summary."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cascade_core.timeline import stored
from cascade_core.timeline.formats import CorrectedTimeline
from cascade_core.timeline.replay import StepTimes, idle_before, measured_times, requests
from cascade_core.timeline.stats import error_pct, error_summary

_number = stored.duration  # a simulated timeline is read as it is: any shape (timeline/stored.py)


def _row(base: dict[str, Any], real: dict[str, Any] | None, sim: dict[str, Any] | None) -> dict[str, Any]:
    row = dict(base)
    for field in ("wall_ns", "gpu_busy_ns"):
        real_value = _number(real.get(field)) if real else None
        sim_value = _number(sim.get(field)) if sim else None
        short = field.removesuffix("_ns")
        row[f"real_{field}"] = real_value
        row[f"sim_{field}"] = sim_value
        row[f"{short}_error_pct"] = error_pct(real_value, sim_value)
    return row


def _simulated_anything(sim: dict[str, Any] | None) -> bool:
    """A step whose launches none mapped to a kernel the sim finished is replayed with its measured
    durations: it reproduces the measurement, so comparing it would report a 0% error for nothing."""
    return sim is not None and sim.get("simulated_kernels") != 0


def _as_dicts(times: Sequence[StepTimes]) -> list[dict[str, Any]]:
    return [
        {"index": t.index, "kind": t.kind, "wall_ns": t.wall_ns, "gpu_busy_ns": t.gpu_busy_ns} for t in times
    ]


def compare(timeline: CorrectedTimeline, simulated: dict[str, Any]) -> dict[str, Any]:
    """compare.json: steps matched by `index`, requests by `index`. A step that simulated no kernel
    (and a request none of whose steps did) is not compared: its sim values and errors are null,
    and the summary leaves it out, so nothing compared gives null statistics, never 0%."""
    measured = [measured_times(step) for step in timeline.steps]
    sim_steps = {
        at: s
        for s in stored.items(simulated, "steps")
        if (at := stored.index(s)) is not None and _simulated_anything(s)
    }
    steps = []
    for step, real in zip(timeline.steps, _as_dicts(measured)):
        steps.append(
            _row({"index": step.index, "name": step.name, "kind": step.kind}, real, sim_steps.get(step.index))
        )
    real_requests = requests(measured, idle_before(timeline))
    sim_requests = {
        at: r
        for r in stored.items(simulated, "requests")
        if (at := stored.index(r)) is not None
        and isinstance(r.get("steps"), list)
        and any(isinstance(i, int) and i in sim_steps for i in r["steps"])
    }
    request_rows = [
        _row({"index": r["index"], "steps": r["steps"]}, r, sim_requests.get(r["index"]))
        for r in real_requests
    ]
    return {
        "steps": steps,
        "requests": request_rows,
        "summary": {
            "wall_ns": error_summary([(s["real_wall_ns"], s["sim_wall_ns"]) for s in steps]),
            "gpu_busy_ns": error_summary([(s["real_gpu_busy_ns"], s["sim_gpu_busy_ns"]) for s in steps]),
        },
    }
