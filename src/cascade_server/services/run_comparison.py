"""Pure result maths: the per-kernel comparison, real timing, and the Perfetto (Chrome) trace."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from cascade_core.comparison import RealTiming, compare_rows, config_order, kernel_rows, row_doc
from cascade_core.models import Comparison, KernelStat, RunDetail, SimStepTimeline, SimSummary
from cascade_core.timeline import stored

STAND_IN_NOTE = (
    "Sims that ran the stand-in replay a recorded Accel-Sim log: their numbers do not describe this trace."
)


def run_configs(run: RunDetail) -> list[str]:
    """The run's variants (labels; a config's name when it has no options) in entry order, without
    repeats: everything here groups by variant."""
    return config_order(entry.variant for entry in run.entries)


# Rows written per json.dumps call: a few milliseconds each, so a comparison of 300,000 rows
# built in a thread lets the event loop run between batches.
JSON_BATCH = 2_000


def comparison(
    run: RunDetail, kernels: list[KernelStat], real: RealTiming | None, names: Sequence[str] = ()
) -> Comparison:
    """The run's per-kernel comparison (see `comparison.compare_rows`) with its configs;
    `names`: the trace's kernel names, for positions no sim has finished yet."""
    configs = run_configs(run)
    rows = kernel_rows(configs, {sim.id: sim.label for sim in run.sims}, kernels, real, names)
    return Comparison(has_real_timing=bool(real), configs=configs, rows=rows)


def comparison_json(
    run: RunDetail, kernels: list[KernelStat], real: RealTiming | None, names: Sequence[str] = ()
) -> bytes:
    """`comparison(...).model_dump_json()`, without a model per row (a trace of 300,000 real
    kernels made 300,000 and took seconds): the same JSON, a batch of rows at a time. Blocking:
    run it in a thread."""
    configs = run_configs(run)
    rows = compare_rows(configs, {sim.id: sim.label for sim in run.sims}, kernels, real, names)
    head = json.dumps({"has_real_timing": bool(real), "configs": configs}, separators=(",", ":"))
    parts = [head[:-1].encode(), b',"rows":[']
    batch: list[dict[str, Any]] = []
    first = True
    for values in rows:
        batch.append(row_doc(values))
        if len(batch) == JSON_BATCH:
            parts.append((b"" if first else b",") + _dumps(batch)[1:-1])
            first, batch = False, []
    if batch:
        parts.append((b"" if first else b",") + _dumps(batch)[1:-1])
    parts.append(b"]}")
    return b"".join(parts)


def _dumps(docs: list[dict[str, Any]]) -> bytes:
    return json.dumps(docs, separators=(",", ":"), allow_nan=False).encode()


def _power_count(sim: SimSummary, pid_of: dict[str, int], ts: float, watts: float) -> dict[str, Any]:
    """A counter event of the replica's power track (Perfetto draws one track per name)."""
    return {
        "ph": "C",
        "name": f"power W, replica {sim.replica}",
        "pid": pid_of.get(sim.label, 0),
        "ts": ts,
        "args": {"W": watts},
    }


def perfetto_trace(
    run: RunDetail,
    kernels: list[KernelStat],
    demangle=lambda name: name,
    step_timelines: list[SimStepTimeline] | None = None,
) -> dict[str, Any]:
    """Chrome trace JSON: a process per config variant, a thread per replica, one slice per kernel laid
    end to end by `sim_time_ns` (timestamps in microseconds, as the format wants); with power, a
    counter track per replica of each kernel's average power; with step timelines, a second thread
    per replica with its predicted steps."""
    configs = run_configs(run)
    pid_of = {config: number for number, config in enumerate(configs, start=1)}
    sims = {sim.id: sim for sim in run.sims}
    events: list[dict[str, Any]] = []
    for config, pid in pid_of.items():
        events.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": config}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "args": {"sort_index": pid}})
    for sim in run.sims:
        if sim.shard is not None and sim.shard.index:
            continue  # a replica's shards are one thread, named by its first shard
        pid, tid = pid_of.get(sim.label, 0), sim.replica + 1
        events.append(
            {
                "ph": "M",
                "name": "thread_name",
                "pid": pid,
                "tid": tid,
                "args": {"name": f"replica {sim.replica} ({sim.id}, {sim.state})"},
            }
        )
    clock_us: dict[tuple[str, int], float] = {}  # per replica: its shards' kernels end to end
    powered: set[tuple[str, int]] = set()  # the replicas with a power counter track
    for stat in kernels:
        kernel_sim = sims.get(stat.sim_id)
        if kernel_sim is not None and stat.failed is not None:
            events.append(_failed_mark(stat, kernel_sim, pid_of, clock_us, demangle))
            continue
        if kernel_sim is None or stat.sim_time_ns is None:
            continue
        replica = (kernel_sim.label, kernel_sim.replica)
        start = clock_us.get(replica, 0.0)
        duration = stat.sim_time_ns / 1000.0
        clock_us[replica] = start + duration
        events.append(
            {
                "ph": "X",
                # a sampled sim's kernel not simulated takes its representative's time: marked
                "cat": "kernel" if stat.estimated_from is None else "estimated",
                "name": demangle(stat.kernel_name),
                "pid": pid_of.get(kernel_sim.label, 0),
                "tid": kernel_sim.replica + 1,
                "ts": start,
                "dur": duration,
                "args": {
                    "kernel_index": stat.kernel_index,
                    "kernel_name": stat.kernel_name,
                    "kernel_launch_uid": stat.kernel_launch_uid,
                    "gpu_sim_cycle": stat.gpu_sim_cycle,
                    "gpu_sim_insn": stat.gpu_sim_insn,
                    "gpu_ipc": stat.gpu_ipc,
                    "sim_time_ns": stat.sim_time_ns,
                    **({"estimated_from": stat.estimated_from} if stat.estimated_from is not None else {}),
                    **(
                        {"power_avg_w": stat.power.avg_w, "energy_j": stat.energy_j}
                        if stat.power is not None
                        else {}
                    ),
                },
            }
        )
        if stat.power is not None or replica in powered:
            # the counter holds the kernel's average power for its slice (0 where it has none)
            powered.add(replica)
            watts = stat.power.avg_w if stat.power is not None else 0.0
            events.append(_power_count(kernel_sim, pid_of, start, watts))
    for label, number in sorted(powered):  # the track drops to 0 after the replica's last kernel
        ends = next(s for s in run.sims if (s.label, s.replica) == (label, number))
        events.append(_power_count(ends, pid_of, clock_us[(label, number)], 0.0))
    events += step_slices(pid_of, step_timelines or [])
    other = {"run_id": run.id, "trace_id": run.trace_id, "source": "Cascade: Accel-Sim simulated time"}
    if run.replay or run.sample:
        other["note"] = STAND_IN_NOTE
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": other}


def _failed_mark(stat: KernelStat, sim: SimSummary, pid_of, clock_us, demangle) -> dict[str, Any]:
    """A kernel the simulator failed on: no slice (it has no time), an instant mark where it
    would have started, with the simulator's reason."""
    return {
        "ph": "i",
        "s": "t",
        "cat": "failed",
        "name": f"failed in the simulator: {demangle(stat.kernel_name) or f'kernel {stat.kernel_index + 1}'}",
        "pid": pid_of.get(sim.label, 0),
        "tid": sim.replica + 1,
        "ts": clock_us.get((sim.label, sim.replica), 0.0),
        "args": {"kernel_index": stat.kernel_index, "kernel_name": stat.kernel_name, "reason": stat.failed},
    }


# Predicted steps go on their own thread of the replica's process, after the kernel threads.
STEP_TID_OFFSET = 1000


def step_slices(pid_of: dict[str, int], timelines: list[SimStepTimeline]) -> list[dict[str, Any]]:
    """Each sim's predicted steps laid end to end (a slice per step, its real wall and error in
    the args when the timeline has a comparison). A timeline is stored as the simulator sent it
    (any shape): a step without a drawable wall is left out, and every arg is a finite number or
    null, so the trace stays strict JSON."""
    events: list[dict[str, Any]] = []
    for timeline in timelines:
        pid, tid = (
            pid_of.get(timeline.label or timeline.gpu_config, 0),
            STEP_TID_OFFSET + timeline.replica + 1,
        )
        events.append(
            {
                "ph": "M",
                "name": "thread_name",
                "pid": pid,
                "tid": tid,
                "args": {"name": f"replica {timeline.replica} predicted steps ({timeline.sim_id})"},
            }
        )
        compared: dict[int, dict[str, Any]] = {}
        for row in stored.items(timeline.compare, "steps"):
            if (at := stored.index(row)) is not None:
                compared.setdefault(at, row)
        clock_us = 0.0
        for step in stored.items(timeline.simulated, "steps"):
            wall = stored.duration(step.get("wall_ns"))
            if wall is None:
                continue
            at = stored.index(step)
            row = compared.get(at, {}) if at is not None else {}
            events.append(
                {
                    "ph": "X",
                    "cat": "step",
                    "name": f"{stored.text(step.get('name'), 'step')} ({stored.text(step.get('kind'), 'step')})",
                    "pid": pid,
                    "tid": tid,
                    "ts": clock_us,
                    "dur": wall / 1000.0,
                    "args": {
                        "index": at,
                        "wall_ns": wall,
                        "gpu_busy_ns": stored.duration(step.get("gpu_busy_ns")),
                        "real_wall_ns": stored.duration(row.get("real_wall_ns")),
                        "wall_error_pct": stored.error_pct(row.get("wall_error_pct")),
                    },
                }
            )
            clock_us += wall / 1000.0
    return events
