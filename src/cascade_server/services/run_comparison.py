"""Pure result maths: the per-kernel comparison, real timing, and the Perfetto (Chrome) trace."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cascade_core.comparison import config_order, kernel_rows
from cascade_core.models import Comparison, KernelStat, RunDetail, SimStepTimeline, SimSummary
from cascade_core.step_upload import shape_problem
from cascade_core.trace_layout import times_a_kernel

STAND_IN_NOTE = (
    "Sims that ran the stand-in replay a recorded Accel-Sim log: their numbers do not describe this trace."
)


def run_configs(run: RunDetail) -> list[str]:
    """The run's variants (labels; a config's name when it has no options) in entry order, without
    repeats: everything here groups by variant."""
    return config_order(entry.variant for entry in run.entries)


def comparison(
    run: RunDetail,
    kernels: list[KernelStat],
    real: list[tuple[str | None, float | None]] | None,
    names: Sequence[str] = (),
) -> Comparison:
    """The run's per-kernel comparison (see `comparison.kernel_rows`) with its configs; it has
    real timing when the trace's times at least one kernel (as the trace's `has_real_timing`);
    `names`: the trace's kernel names, for positions no sim has finished yet."""
    configs = run_configs(run)
    rows = kernel_rows(configs, {sim.id: sim.label for sim in run.sims}, kernels, real, names)
    return Comparison(has_real_timing=times_a_kernel(real), configs=configs, rows=rows)


def perfetto_trace(
    run: RunDetail,
    kernels: list[KernelStat],
    demangle=lambda name: name,
    step_timelines: list[SimStepTimeline] | None = None,
) -> dict[str, Any]:
    """Chrome trace JSON: a process per config variant, a thread per replica, one slice per kernel laid
    end to end by `sim_time_ns` (timestamps in microseconds, as the format wants); with step
    timelines, a second thread per replica with its predicted steps."""
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
                "cat": "kernel",
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
                },
            }
        )
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
    the args when the timeline has a comparison)."""
    events: list[dict[str, Any]] = []
    for timeline in timelines:
        if shape_problem(timeline.simulated, timeline.compare) is not None:
            continue  # stored before uploads were checked, in a shape no reader can draw
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
        compared = {
            row.get("index"): row
            for row in (timeline.compare or {}).get("steps", [])
            if isinstance(row, dict)
        }
        clock_us = 0.0
        for step in timeline.simulated.get("steps", []):
            wall = step.get("wall_ns") if isinstance(step, dict) else None
            if not isinstance(wall, (int, float)):
                continue
            row = compared.get(step.get("index"), {})
            events.append(
                {
                    "ph": "X",
                    "cat": "step",
                    "name": f"{step.get('name', 'step')} ({step.get('kind', 'step')})",
                    "pid": pid,
                    "tid": tid,
                    "ts": clock_us,
                    "dur": wall / 1000.0,
                    "args": {
                        "index": step.get("index"),
                        "wall_ns": wall,
                        "gpu_busy_ns": step.get("gpu_busy_ns"),
                        "real_wall_ns": row.get("real_wall_ns"),
                        "wall_error_pct": row.get("wall_error_pct"),
                    },
                }
            )
            clock_us += wall / 1000.0
    return events
