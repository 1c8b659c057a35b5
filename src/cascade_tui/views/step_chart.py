"""The step-timeline view as (text, style) lines, painted like the kernels view: per config the
predicted step wall against the real one per step (bars), per-kind means, coverage and the error
summary, from `GET /api/runs/{id}/step-timelines`.

Pure: the widget maps style names to colours; tests read the text. Replicas of a config are
folded into their median per step (the simulator is deterministic: they usually agree). A timeline
is stored as the simulator sent it, of any shape: what cannot be drawn is left out
(`cascade_core.timeline.stored`), never an error.
"""

from __future__ import annotations

import statistics
import textwrap
from collections.abc import Sequence
from typing import Any

from cascade_core.models import SimStepTimeline
from cascade_core.timeline import stored
from cascade_core.timeline.stats import pct_text

from .chart import Line, _bar_line
from .formatting import ellipsize, plural, time_ns

NO_TIMELINE = (
    "This trace has no step timeline: import a PyTorch profile of the workload "
    "(`cascade timeline import PROFILE TRACE_DIR`, or `cascade upload --profile`) to get one."
)
NOT_YET = "No step timeline yet: each sim sends one when it succeeds."


_num = stored.number


def _count(value: Any) -> int:
    """A count from a stored summary: a whole number of at least 0, else 0."""
    number = stored.number(value, 0, 1e15)
    return int(number) if number is not None else 0


def _median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def step_lines(
    timelines: Sequence[SimStepTimeline],
    configs: Sequence[str],
    width: int,
    *,
    has_step_timeline: bool = True,
    stand_in: str | None = None,
) -> list[Line]:
    lines: list[Line] = []
    wrap = max(20, width - 1)
    if stand_in:
        # The run screen's banner gives the reason, once: here only what it means for steps.
        note = "The predicted steps use the recorded log's kernel times, not this trace's."
        lines += [[(text, "dim")] for text in textwrap.wrap(note, wrap)]
    if not timelines:
        lines += [
            [(text, "dim")] for text in textwrap.wrap(NOT_YET if has_step_timeline else NO_TIMELINE, wrap)
        ]
        return lines
    by_config: dict[str, list[SimStepTimeline]] = {}
    for timeline in timelines:
        by_config.setdefault(timeline.label or timeline.gpu_config, []).append(timeline)
    shown = [c for c in configs if c in by_config] + [c for c in by_config if c not in configs]
    style_of = {cfg: f"cfg{i % 6}" for i, cfg in enumerate(configs)}
    label_w = max(6, min(16, max(len(c) for c in shown)))
    bar_w = max(8, width - label_w - 10 - 14)

    # Real steps (from any comparison: they are the same measured steps) and each config's
    # median predicted wall per step index.
    real: dict[int, dict[str, Any]] = {}
    names: dict[int, tuple[str, str]] = {}
    predicted: dict[str, dict[int, float | None]] = {}
    simulated_steps: dict[str, set[int]] = {}  # steps that simulated a kernel: only those have an error
    for config in shown:
        walls: dict[int, list[float | None]] = {}
        for timeline in by_config[config]:
            for step in stored.items(timeline.simulated, "steps"):
                if (at := stored.index(step)) is not None:
                    walls.setdefault(at, []).append(stored.duration(step.get("wall_ns")))
                    if step.get("simulated_kernels") != 0:
                        simulated_steps.setdefault(config, set()).add(at)
                    names.setdefault(
                        at, (stored.text(step.get("name"), "step"), stored.text(step.get("kind"), "step"))
                    )
            for row in stored.items(timeline.compare, "steps"):
                if (at := stored.index(row)) is not None:
                    real.setdefault(at, row)
        predicted[config] = {index: _median(values) for index, values in walls.items()}

    lines.append(
        [
            ("Predicted step wall per config", "title"),
            ("  (real: measured by the profiler)" if real else "", "dim"),
        ]
    )
    for config in shown:
        first = by_config[config][0]
        summary = stored.mapping(first.simulated, "summary")
        coverage = stored.mapping(stored.mapping(summary, "simulation"), "coverage")
        replicas = len(by_config[config])
        head: Line = [
            (ellipsize(config, label_w), style_of.get(config, "name")),
            (f"  {plural(replicas, 'replica')}", "dim"),
        ]
        if coverage:
            head.append(
                (
                    f"  {_count(coverage.get('simulated_kernels'))}/{_count(coverage.get('kernels'))} kernels"
                    f" simulated, {(_num(coverage.get('gpu_time_fraction'), 0, 1) or 0) * 100:.0f}% of GPU time",
                    "dim",
                )
            )
        lines.append(head)
        wall = stored.mapping(stored.mapping(first.compare, "summary"), "wall_ns")
        if _count(wall.get("count")):
            lines.append(
                [
                    ("  step wall error: mean ", ""),
                    (pct_text(stored.error_pct(wall.get("mean_error_pct")), signed=True, digits=1), ""),
                    (
                        f", mean |err| {pct_text(stored.error_pct(wall.get('mean_abs_error_pct')), digits=1)}"
                        f", p95 |err| {pct_text(stored.error_pct(wall.get('p95_abs_error_pct')), digits=1)}",
                        "",
                    ),
                    (f" ({plural(_count(wall.get('count')), 'step')})", "dim"),
                ]
            )
        elif wall:
            lines.append(
                [("  step wall error: n/a", ""), ("  (no step simulated a kernel: nothing compared)", "dim")]
            )
        per_kind = stored.mapping(summary, "per_kind")
        for kind, means in per_kind.items():
            if not isinstance(means, dict):
                continue
            real_walls = [
                w
                for r in real.values()
                if r.get("kind") == kind and (w := stored.duration(r.get("real_wall_ns"))) is not None
            ]
            real_mean = statistics.fmean(real_walls) if real_walls else None
            lines.append(
                [
                    (f"  {stored.text(kind, 'step')}: ", "dim"),
                    (f"wall {time_ns(stored.duration(means.get('wall_ns')))}", ""),
                    (f", GPU busy {time_ns(stored.duration(means.get('gpu_busy_ns')))}", "dim"),
                    (f"  (real wall {time_ns(real_mean)})" if real_mean is not None else "", "dim"),
                ]
            )
    lines.append([])

    for index in sorted(names):
        name, kind = names[index]
        lines.append([(f"#{index} ", "dim"), (ellipsize(f"{name} ({kind})", max(10, width - 8)), "name")])
        real_wall = stored.duration(real.get(index, {}).get("real_wall_ns"))
        values = [v for c in shown if (v := predicted[c].get(index)) is not None]
        scale = max([*values, real_wall or 0.0], default=0.0)
        if real_wall is not None:
            lines.append(_bar_line("real", label_w, real_wall, scale, bar_w, "real"))
        for config in shown:
            value = predicted[config].get(index)
            suffix: Line = []
            if real_wall and value is not None:
                error = (
                    stored.error_pct((value - real_wall) / real_wall * 100)
                    if index in simulated_steps.get(config, set())
                    else None
                )
                suffix.append((f"  {pct_text(error, signed=True, digits=1)}", "dim"))
            lines.append(
                _bar_line(config, label_w, value, scale, bar_w, style_of.get(config, "name"), suffix)
            )
    return lines
