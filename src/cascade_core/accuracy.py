"""How far simulated kernel times are from real ones: the statistics Accel-Sim's correlator
reports per config (error, bias, correlation), for `GET /api/accuracy`, `cascade accuracy` and the
terminal UI's Accuracy screen. Pure: models and the standard library only.

The pairs come from the same comparison rows as `/comparison` (kernels matched by position; a
row's simulated time is the median over replicas); only rows where both times are known, the
real time is positive and real timing names the kernel the sims ran there count. Every figure is
bounded: a kernel's error counts at most ±ERROR_PCT_BOUND.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from cascade_core.comparison import RowValues
from cascade_core.models import AccuracyKernel, AccuracyPoint, ComparisonRow

WORST = 5
# The bands the scatter draws around the diagonal: within ±50% of the real time.
BAND = 0.5
# A kernel's error counts at most this much either way (a simulated time 10,001 times the real
# one): past it the kernel or its timing is not what it seems, and more digits say nothing more.
ERROR_PCT_BOUND = 1e6


@dataclass(frozen=True)
class AccuracyStats:
    kernels: int
    mape_pct: float | None
    mean_error_pct: float | None
    pearson_r: float | None
    worst: list[AccuracyKernel]
    points: list[AccuracyPoint]


def pairs_of(rows: Iterable[ComparisonRow | RowValues], key: str) -> list[AccuracyPoint]:
    """The rows where `key`'s simulated time and the real time are both known and finite
    (real > 0: an Infinity or NaN on either side would make every statistic of the row NaN), and
    real timing names the kernel the sims ran there (a row with `sim_kernel_name` compares
    another kernel's real time)."""
    points = []
    for row in rows:
        sim, real = row.sim_ns.get(key), row.real_ns
        if row.sim_kernel_name is not None:
            continue
        if real is None or sim is None or not math.isfinite(real) or not math.isfinite(sim) or not real > 0:
            continue
        points.append(
            AccuracyPoint(
                kernel_index=row.kernel_index, kernel_name=row.kernel_name, real_ns=real, sim_ns=sim
            )
        )
    return points


def unmatched(rows: Iterable[ComparisonRow | RowValues], key: str) -> int:
    """Rows with both times known that are not compared: real timing names another kernel there."""
    return sum(
        1
        for row in rows
        if row.sim_kernel_name is not None and row.real_ns is not None and row.sim_ns.get(key) is not None
    )


def error_pct(real: float, sim: float) -> float:
    """(sim - real) / real * 100, within ±ERROR_PCT_BOUND."""
    return max(-ERROR_PCT_BOUND, min(ERROR_PCT_BOUND, (sim - real) / real * 100.0))


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson's r, or None with fewer than 2 points or no spread on either side."""
    if len(xs) < 2 or len(xs) != len(ys):
        return None
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx <= 0 or syy <= 0:
        return None
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def accuracy(points: Sequence[AccuracyPoint]) -> AccuracyStats:
    """MAPE, signed mean error, r of log real against log simulated time, and the worst rows."""
    if not points:
        return AccuracyStats(0, None, None, None, [], [])
    errors = [error_pct(p.real_ns, p.sim_ns) for p in points]
    logs = [(math.log10(p.real_ns), math.log10(p.sim_ns)) for p in points if p.sim_ns > 0]
    ranked = sorted(zip(points, errors), key=lambda pe: (-abs(pe[1]), pe[0].kernel_index))[:WORST]
    return AccuracyStats(
        kernels=len(points),
        mape_pct=statistics.fmean(abs(e) for e in errors),
        mean_error_pct=statistics.fmean(errors),
        pearson_r=pearson([x for x, _ in logs], [y for _, y in logs]),
        worst=[
            AccuracyKernel(kernel_name=p.kernel_name, real_ns=p.real_ns, sim_ns=p.sim_ns, error_pct=e)
            for p, e in ranked
        ],
        points=list(points),
    )


def step_wall_error(compares: Iterable[Mapping | None]) -> float | None:
    """The mean over sims of their predicted step wall times' mean absolute error (%), from each
    sim's `cascade compare` summary (stored as the simulator sent it: any shape), each within
    ±ERROR_PCT_BOUND; None when no sim has one."""
    values = []
    for compare in compares:
        summary = (compare or {}).get("summary") if isinstance(compare, Mapping) else None
        wall = summary.get("wall_ns") if isinstance(summary, Mapping) else None
        value = wall.get("mean_abs_error_pct") if isinstance(wall, Mapping) else None
        if isinstance(value, int | float) and not isinstance(value, bool):
            try:
                number = float(value)
            except OverflowError:  # an integer past any float
                number = math.copysign(math.inf, value)
            if not math.isnan(number):
                values.append(max(-ERROR_PCT_BOUND, min(ERROR_PCT_BOUND, number)))
    return statistics.fmean(values) if values else None


def within_band(point: AccuracyPoint, band: float = BAND) -> bool:
    return abs(point.sim_ns - point.real_ns) <= band * point.real_ns
