"""`GET /api/accuracy`: for every trace with real timing, how far each variant's finished real
sims are from it, over every run on that trace. The rows are built from the same comparison rows
as `/comparison` (kernels matched by position and name, a row's simulated time the median over
replicas, here over every replica of the variant in every run on the trace), from the real
timing stored with the trace; the statistics are in cascade_core/accuracy.py. Sims of the
stand-in (replayed runs) and of sample runs never count, nor sims that did not succeed.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from cascade_core.accuracy import accuracy, pairs_of, step_wall_error, unmatched
from cascade_core.comparison import compare_rows
from cascade_core.models import AccuracyRow, KernelStat, SimSummary
from cascade_core.variants import options_key

from ..storage import Store
from .step_timelines import run_step_timelines

log = logging.getLogger(__name__)

VariantKey = tuple[str, tuple[tuple[str, str], ...]]


async def accuracy_rows(
    store: Store,
    traces_dir: Path,
    *,
    trace: str | None = None,
    config: str | None = None,
    points: bool = False,
) -> list[AccuracyRow]:
    rows: list[AccuracyRow] = []
    for summary in await store.traces.list_traces(["ready"]):
        if not summary.has_real_timing or summary.sample or (trace is not None and summary.id != trace):
            continue
        try:
            rows += await _trace_rows(store, traces_dir, summary.id, config=config, points=points)
        except Exception:  # one trace's bad data must not take every other trace's rows with it
            log.exception("accuracy of trace %s could not be computed; it is left out", summary.id)
    return rows


async def _trace_rows(
    store: Store, traces_dir: Path, trace_id: str, *, config: str | None, points: bool
) -> list[AccuracyRow]:
    """The rows of one trace (none without readable real timing or finished sims)."""
    rows: list[AccuracyRow] = []
    detail = await store.traces.get_trace(trace_id)
    if detail is None:
        return []
    real = await store.traces.real_timing(detail.id)
    if not real:
        return []
    sims: dict[VariantKey, list[SimSummary]] = {}
    labels: dict[VariantKey, str] = {}
    runs_of: dict[VariantKey, list[str]] = {}
    kernels: list[KernelStat] = []
    step_compares: dict[VariantKey, list] = {}
    for run_summary in await store.runs.list_runs():
        if run_summary.trace_id != detail.id or run_summary.replay or run_summary.sample:
            continue
        if await store.traces.live_trace_of_run(run_summary.id) is None:
            continue  # a run of an earlier trace under this id
        run = await store.runs.get_run(run_summary.id)
        if run is None:
            continue
        finished = [s for s in run.sims if s.state == "succeeded"]
        if not finished:
            continue
        for sim in finished:
            key = options_key(sim.gpu_config, sim.options)
            sims.setdefault(key, []).append(sim)
            labels.setdefault(key, sim.label)  # the newest run's label (runs come newest first)
            if run.id not in runs_of.setdefault(key, []):
                runs_of[key].append(run.id)
        ids = {s.id for s in finished}
        kernels += [k for k in await store.outputs.run_kernels(run.id) if k.sim_id in ids]
        if detail.has_step_timeline:
            for timeline in await run_step_timelines(store, traces_dir, run):  # sharded: merged
                if timeline.sim_id in ids:
                    sim = next(s for s in finished if s.id == timeline.sim_id)
                    step_compares.setdefault(options_key(sim.gpu_config, sim.options), []).append(
                        timeline.compare
                    )
    if not sims:
        return []
    names = {key: f"v{n}" for n, key in enumerate(sims)}
    config_of = {sim.id: names[key] for key, group in sims.items() for sim in group}
    compared = await asyncio.to_thread(
        lambda: list(compare_rows(list(names.values()), config_of, kernels, real, simulated_only=True))
    )
    for key, group in sorted(sims.items(), key=lambda kv: (kv[0][0], labels[kv[0]])):
        gpu_config, options = key
        label = labels[key]
        if config is not None and config not in (gpu_config, label):
            continue
        stats = await asyncio.to_thread(accuracy, pairs_of(compared, names[key]))
        rows.append(
            AccuracyRow(
                trace_id=detail.id,
                gpu_config=gpu_config,
                label=label,
                options=dict(options),
                sims=len({(sim.run_id, sim.replica) for sim in group}),  # a sharded replica once
                runs=runs_of[key],
                kernels=stats.kernels,
                kernels_failed=sum(1 for row in compared if names[key] in row.failed),
                kernels_estimated=sum(1 for row in compared if names[key] in row.estimated and row.real_ns),
                kernels_unmatched=unmatched(compared, names[key]),
                mape_pct=stats.mape_pct,
                mean_error_pct=stats.mean_error_pct,
                pearson_r=stats.pearson_r,
                worst=stats.worst,
                step_wall_error_pct=step_wall_error(step_compares.get(key, []))
                if detail.has_step_timeline
                else None,
                points=stats.points if points else None,
            )
        )
    return rows
