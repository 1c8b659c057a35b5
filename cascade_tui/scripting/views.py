"""What each command prints, as records and columns (see `output`): runs, traces, a run's sims,
and a run's results (totals per config, every kernel, the real-vs-simulated comparison).

Records hold raw values (times in ns, counts, mangled and demangled kernel names) so JSON and
CSV are exact; the columns say how the table shows them. Pure: no I/O, no Textual.
"""

from __future__ import annotations

import math
import re
from fnmatch import fnmatchcase
from collections.abc import Mapping, Sequence
from datetime import datetime

from cascade_server.shared.models import (
    MAX_ENTRY_COUNT,
    SIM_STATES,
    TERMINAL_SIM_STATES,
    Comparison,
    GpuConfig,
    KernelStat,
    RunDetail,
    RunEntry,
    RunResults,
    RunSummary,
    SimState,
    SimSummary,
    TraceSummary,
    run_state,
)

from ..compare import ConfigTotal, config_order, config_totals, rank, stand_in_reason
from ..formatting import (
    age,
    demangle,
    fixed,
    human_bytes,
    human_duration,
    run_seconds,
    run_took,
    short_kernel_name,
    si_number,
    state_label,
    time_ns,
)
from .output import Column, Record, printable

# `SM7_QV100x2`: a config and how many sims run it (the count is optional, 1 by default).
_ENTRY = re.compile(r"^(?P<name>.+?)(?:x(?P<count>\d+))?$")


class EntryError(ValueError):
    """A `--config` value that is not NAME or NAMExN."""


def parse_entries(values: Sequence[str]) -> list[RunEntry]:
    """`["SM7_QV100x2", "SM7_TITANV"]` -> entries, in order; a config named twice adds up (the
    server takes each config once)."""
    counts: dict[str, int] = {}
    for value in values:
        match = _ENTRY.match(value.strip())
        if not match or not match["name"]:
            raise EntryError(f"--config {value!r}: expected NAME or NAMExN, e.g. SM7_QV100x2")
        count = int(match["count"]) if match["count"] else 1
        if not 1 <= count <= MAX_ENTRY_COUNT:
            raise EntryError(f"--config {value!r}: the count must be 1 to {MAX_ENTRY_COUNT}")
        counts[match["name"]] = counts.get(match["name"], 0) + count
    return [RunEntry.model_construct(gpu_config=name, count=count) for name, count in counts.items()]


def entries_text(entries: Sequence[RunEntry]) -> str:
    """`SM7_QV100x2 SM7_TITANV`: the form `--config` takes."""
    return " ".join(e.gpu_config if e.count == 1 else f"{e.gpu_config}x{e.count}" for e in entries)


def sims_text(counts: Mapping[SimState, int] | Mapping[str, int]) -> str:
    """`2/3 succeeded, 1 failed`: succeeded of all, then every other state present."""
    total = sum(counts.values())
    parts = [f"{counts.get('succeeded', 0)}/{total} succeeded"]
    parts += [f"{counts.get(s)} {s}" for s in SIM_STATES if s != "succeeded" and counts.get(s)]
    return ", ".join(parts)


def _marks(run: RunSummary) -> str:
    return "sample" if run.sample else ("stand-in" if run.replay else "")


# --- lists ---------------------------------------------------------------------------------------

RUN_COLUMNS = (
    Column("id", "run"),
    Column("state", "state", state_label),
    Column("trace_id", "trace"),
    Column("sims", "sims"),
    Column("configs", "configs"),
    Column("time", "time", right=True),
    Column("age", "age", right=True),
    Column("marks", "note"),
)


def _finished_at(run: RunSummary) -> datetime | None:
    return run.finished_at if run.state != "active" else None


def run_records(runs: Sequence[RunSummary], now: datetime) -> list[Record]:
    """`time`: how long a finished run took (created to its last sim's end), or an active one
    has run so far (the state column tells them apart)."""
    return [
        {"id": r.id, "state": r.state, "trace_id": r.trace_id, "sims": sims_text(r.sim_counts),
         "configs": entries_text(r.entries),
         "time": human_duration(run_seconds(r.created_at, _finished_at(r), now)),
         "age": age(r.created_at, now), "marks": _marks(r)}
        for r in runs
    ]


TRACE_COLUMNS = (
    Column("id", "trace"),
    Column("state", "state", state_label),
    Column("model", "model"),
    Column("arch", "arch"),
    Column("kernels", "kernels", right=True),
    Column("size", "size", right=True),
    Column("age", "age", right=True),
    Column("note", "note / error"),
)


def trace_records(traces: Sequence[TraceSummary], now: datetime) -> list[Record]:
    return [
        {"id": t.id, "state": t.state, "model": t.model, "arch": t.trace_gpu_arch,
         "kernels": t.kernel_count, "size": human_bytes(t.bytes), "age": age(t.created_at, now),
         # a failed trace's error is the first thing to read about it, whole
         "note": t.error or ("sample" if t.sample else "")}
        for t in traces
    ]


CONFIG_COLUMNS = (
    Column("name", "config"),
    Column("arch", "arch"),
    Column("core_clock_mhz", "clock", lambda mhz: f"{mhz:g} MHz", right=True),
)


def config_records(configs: Sequence[GpuConfig]) -> list[Record]:
    return [{"name": c.name, "arch": c.arch, "core_clock_mhz": c.core_clock_mhz} for c in configs]


# --- one run ------------------------------------------------------------------------------------

SIM_COLUMNS = (
    Column("gpu_config", "config"),
    Column("replica", "#", right=True),
    Column("state", "state", state_label),
    Column("kernels", "kernels", right=True),
    Column("cycles", "cycles", si_number, right=True),
    Column("ipc", "IPC", fixed, right=True),
    Column("rate", "rate/s", si_number, right=True),
    Column("elapsed", "elapsed", right=True),
    Column("id", "sim"),
    Column("detail", "kernel (last when finished) / error"),
)


def _elapsed(sim: SimSummary, now: datetime) -> str | None:
    if sim.started_at is None:
        return None
    return age(sim.started_at, sim.finished_at or now)


def sim_records(sims: Sequence[SimSummary], now: datetime) -> list[Record]:
    records = []
    for sim in sims:
        kernel = short_kernel_name(sim.current_kernel)
        if sim.error:
            detail = sim.error
        elif kernel and sim.state in ("succeeded", "failed", "cancelled"):
            detail = f"last: {kernel}"
        else:
            detail = kernel
        records.append({
            "gpu_config": sim.gpu_config, "replica": sim.replica, "state": sim.state,
            "kernels": f"{sim.kernels_done}/{sim.kernels_total}",
            "cycles": sim.latest.gpu_tot_sim_cycle, "ipc": sim.latest.gpu_tot_ipc,
            "rate": sim.latest.sim_rate_ips, "elapsed": _elapsed(sim, now), "id": sim.id,
            "detail": detail,
        })
    return records


def run_header(run: RunDetail, now: datetime) -> list[str]:
    """The lines above a run's sims table."""
    lines = [
        f"run      {run.id}  {state_label(run.state)}  ({sims_text(run.sim_counts)})",
        f"trace    {run.trace_id}  {run.trace.trace_gpu_arch}"
        + (f"  {run.trace.model}" if run.trace.model else ""),
        *([f"         {run.trace.error}"] if run.trace.state == "failed" and run.trace.error else []),
        f"configs  {entries_text(run.entries)}",
        f"created  {run.created_at:%Y-%m-%d %H:%M:%S} UTC ({age(run.created_at, now)} ago)",
        f"started  {_started_text(run)}",
        f"time     {run_took(run.created_at, _finished_at(run), now)}"
        + (f" (finished {run.finished_at:%Y-%m-%d %H:%M:%S} UTC)" if _finished_at(run) else ""),
    ]
    if note := stand_in_note(run):
        lines.append(f"note     {note}")
    return [printable(line) for line in lines]


def _started_text(run: RunSummary) -> str:
    """When the first sim started, and how long the run waited for it (a slot, the cluster)."""
    if run.started_at is None:
        if any(run.sim_counts.get(state) for state in ("succeeded", "failed", "lost")):
            # started_at is a sim's first `running` heartbeat; these sims ran but sent none.
            return "not reported (the sims ended without a `running` heartbeat)"
        return "no sim started" + (" yet" if run.state == "active" else "")
    waited = age(run.created_at, run.started_at)
    return f"{run.started_at:%Y-%m-%d %H:%M:%S} UTC (the first sim, {waited} after the run was created)"


def stand_in_note(run: RunDetail) -> str | None:
    if run.sample:
        return "sample run: recorded Accel-Sim results of the sample trace"
    if reason := stand_in_reason(run, run.sims):
        return f"numbers from the stand-in simulator, not this trace ({reason})"
    return None


# --- results ------------------------------------------------------------------------------------

TOTAL_COLUMNS = (
    Column("config", "config"),
    Column("succeeded", "ok", right=True),
    Column("replicas", "of", right=True),
    Column("total_ns", "simulated", time_ns, right=True),
    Column("low_ns", "lowest", time_ns, right=True),
    Column("high_ns", "highest", time_ns, right=True),
    Column("vs_fastest", "x fastest", lambda v: f"{v:.2f}x", right=True),
    Column("cycles", "cycles", si_number, right=True),
    Column("ipc", "IPC", fixed, right=True),
    Column("partial_ns", "so far", time_ns, right=True, in_table=False),
    Column("note", "note"),
)


def _partial_note(total: ConfigTotal) -> str | None:
    """What the UI's kernels view says of a config with no succeeded replica but finished kernels."""
    if not total.partial or total.median_ns is None:
        return None
    return f"partial: {total.kernels_done}/{total.kernels_total} kernels, {time_ns(total.median_ns)} so far"


def total_records(run: RunDetail, kernels: Sequence[KernelStat]) -> list[Record]:
    """Per config: the median total simulated time over succeeded replicas (with the lowest and
    highest), as a multiple of the fastest config, and the median cycles and IPC.

    A config with no succeeded replica has no total (`total_ns` is None: a script summing or
    comparing `total_ns` never takes part of a run for all of it); the running total of the
    kernels its replicas finished is `partial_ns`, and `note` says so, as the UI marks it."""
    sims = {s.id: s for s in run.sims}
    totals = config_totals(config_order((e.gpu_config for e in run.entries), run.sims), sims, kernels)
    # Stand-in numbers describe a recording, not each config: no multiples, as in the UI.
    multiples = {} if stand_in_reason(run, run.sims) else rank(totals).multiples
    return [
        {"config": t.config, "succeeded": t.succeeded, "replicas": t.replicas,
         **({"total_ns": None, "low_ns": None, "high_ns": None} if t.partial
            else {"total_ns": t.median_ns, "low_ns": t.low_ns, "high_ns": t.high_ns}),
         "vs_fastest": multiples.get(t.config), "cycles": t.cycles, "ipc": t.ipc,
         "partial_ns": t.median_ns if t.partial else None, "note": _partial_note(t)}
        for t in totals
    ]


def ranking_sentence(run: RunDetail, kernels: Sequence[KernelStat]) -> str:
    if reason := stand_in_reason(run, run.sims):
        return (f"Stand-in numbers ({reason}): configs cannot be compared from this run, "
                "so no config is named fastest.")
    sims = {s.id: s for s in run.sims}
    totals = config_totals(config_order((e.gpu_config for e in run.entries), run.sims), sims, kernels)
    return rank(totals).sentence(finished=run.state != "active")


# Which kernel of which sim a row is about: the first columns of --kernels and --stats.
_KERNEL_OF_A_SIM = (
    Column("gpu_config", "config"),
    Column("replica", "#", right=True),
    Column("sim_id", "sim", in_table=False),
    Column("kernel_index", "k", right=True),
    Column("kernel", "kernel", short_kernel_name),
)
KERNEL_COLUMNS = (
    *_KERNEL_OF_A_SIM,
    Column("kernel_name", "mangled", in_table=False),
    Column("sim_time_ns", "simulated", time_ns, right=True),
    Column("gpu_sim_cycle", "cycles", si_number, right=True),
    Column("gpu_sim_insn", "instructions", si_number, right=True),
    Column("gpu_ipc", "IPC", fixed, right=True),
)


def kernel_records(run: RunDetail, kernels: Sequence[KernelStat]) -> list[Record]:
    """Every kernel every sim finished, in the API's order (config, replica, kernel)."""
    sims = {s.id: s for s in run.sims}
    records = []
    for stat in kernels:
        sim = sims.get(stat.sim_id)
        records.append({
            "gpu_config": sim.gpu_config if sim else None, "replica": sim.replica if sim else None,
            "sim_id": stat.sim_id, "kernel_index": stat.kernel_index,
            # the table shortens the demangled name; `kernel` keeps it whole for scripts
            "kernel": demangle(stat.kernel_name), "kernel_name": stat.kernel_name,
            "sim_time_ns": stat.sim_time_ns, "gpu_sim_cycle": stat.gpu_sim_cycle,
            "gpu_sim_insn": stat.gpu_sim_insn, "gpu_ipc": stat.gpu_ipc,
        })
    return records


STAT_COLUMNS = (
    *_KERNEL_OF_A_SIM,
    Column("key", "key"),
    Column("value", "value"),
)


def stat_records(results: RunResults, key_glob: str | None = None) -> list[Record]:
    """Every stats line of every kernel every sim finished, one record per kernel and key (in
    the block's order; repeats under `<key>#<n>`), only keys matching `key_glob` if given."""
    records = []
    for sim in results.sims:
        for stat in sim.kernels:
            kernel = demangle(stat.kernel_name)
            for key, value in stat.stats.items():
                if key_glob is None or fnmatchcase(key, key_glob):
                    records.append({
                        "gpu_config": sim.gpu_config.name, "replica": sim.sim.replica,
                        "sim_id": sim.sim.id, "kernel_index": stat.kernel_index, "kernel": kernel,
                        "key": key, "value": value,
                    })
    return records


def comparison_columns(comparison: Comparison) -> tuple[Column, ...]:
    """Kernel, real time, then one column per config (its name is the JSON / CSV field)."""
    return (
        Column("kernel_index", "k", right=True),
        Column("kernel", "kernel", short_kernel_name),
        Column("kernel_name", "mangled", in_table=False),
        Column("real_ns", "real", time_ns, right=True),
        *(Column(config, config, time_ns, right=True) for config in comparison.configs),
    )


def comparison_records(comparison: Comparison) -> list[Record]:
    """Per kernel position: real time and each config's median simulated time, in ns."""
    return [
        {"kernel_index": row.kernel_index, "kernel": demangle(row.kernel_name),
         "kernel_name": row.kernel_name, "real_ns": row.real_ns,
         **{config: row.sim_ns.get(config) for config in comparison.configs}}
        for row in comparison.rows
    ]


# --- following a run -----------------------------------------------------------------------------

BAR_MIN, BAR_MAX = 10, 24


def progress_line(run_id: str, sims: Sequence[SimSummary], columns: int = 80) -> str:
    """`run-… ▶ active [###xx.....]  30%  1/4 succeeded, 2 running, 1 failed`, at most
    `columns - 1` wide (a line as wide as the terminal wraps, and each redraw would add a row).

    `#` is work that counts: succeeded sims whole, active ones as far as they got (capped: the
    stand-in can finish more kernels than the trace has); `x` is failed or cancelled sims, which
    will do no more; the percentage is the `#` share, floored. So only a run whose every sim
    succeeded reads 100%."""
    weight = {s.id: max(s.kernels_total, 1) for s in sims}
    total = sum(weight.values())
    good = sum(
        weight[s.id] if s.state == "succeeded"
        else 0 if s.state in TERMINAL_SIM_STATES
        else min(s.kernels_done, weight[s.id])
        for s in sims
    )
    lost = sum(weight[s.id] for s in sims if s.state in TERMINAL_SIM_STATES and s.state != "succeeded")
    counts: dict[str, int] = {}
    for sim in sims:
        counts[sim.state] = counts.get(sim.state, 0) + 1
    head = printable(f"{run_id} {state_label(run_state(s.state for s in sims))}")
    tail = f" {math.floor(100 * good / total) if total else 0:3d}%  {sims_text(counts)}"
    room = columns - 1
    width = min(BAR_MAX, room - len(head) - len(tail) - 3)
    if width < BAR_MIN:  # a narrow terminal keeps the numbers and drops the bar
        line = head + tail
    else:
        filled = math.floor(width * good / total) if total else 0
        failed = math.ceil(width * lost / total) if total else 0  # a lost sim always shows
        line = f"{head} [{'#' * filled}{'x' * failed}{'.' * (width - filled - failed)}]{tail}"
    return line if len(line) <= room else line[: room - 1] + "…"
