"""What each command prints, as records and columns (see `output`): runs, traces, configs, a run's
sims and its progress line (a run's results are in `result_views`).

Records hold raw values (times in ns, counts, mangled and demangled kernel names) so JSON and
CSV are exact; the columns say how the table shows them. Pure: no I/O, no Textual.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import datetime

from cascade_core.models import (
    MAX_ENTRY_COUNT,
    TERMINAL_SIM_STATES,
    GpuConfig,
    RunDetail,
    RunEntry,
    RunSummary,
    SimSummary,
    TraceSummary,
    run_state,
)
from cascade_core.quoting import quoted
from cascade_core.shard_merge import replica_progress
from cascade_core.variants import VariantError, parse_assignment, parse_sweep, sweep_options

from .compare import SAMPLE_RUN_NOTE, stand_in_reason
from .formatting import (
    age,
    fixed,
    human_bytes,
    short_kernel_name,
    si_number,
    state_label,
)
from .output import Column, Record, printable
from .run_rows import run_mark, run_time, run_took_text, sims_text
from .shard_text import any_sharded, shard_cell

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
            raise EntryError(f"--config {quoted(value)}: expected NAME or NAMExN, e.g. SM7_QV100x2")
        count = int(match["count"]) if match["count"] else 1
        if not 1 <= count <= MAX_ENTRY_COUNT:
            raise EntryError(f"--config {quoted(value)}: the count must be 1 to {MAX_ENTRY_COUNT}")
        counts[match["name"]] = counts.get(match["name"], 0) + count
    return [RunEntry.model_construct(gpu_config=name, count=count) for name, count in counts.items()]


def variant_entries(
    entries: Sequence[RunEntry], sweeps: Sequence[str] = (), fixed: Sequence[str] = (), baseline: bool = False
) -> list[RunEntry]:
    """`--config` entries times the `--sweep OPTION=V1,V2` cross product, each with the `--option
    OPTION=VALUE` options; with `baseline`, each config also runs unmodified, first. Raises
    EntryError for an option that is not OPTION=VALUE."""
    try:
        fixed_pairs = [parse_assignment(text) for text in fixed]
        swept = [parse_sweep(text) for text in sweeps]
    except VariantError as exc:
        raise EntryError(str(exc)) from None
    # An option given twice would silently lose one value (the API refuses it in one entry).
    fixed_options: dict[str, str] = {}
    for name, value in fixed_pairs:
        if name in fixed_options:
            raise EntryError(
                f"--option {name} is given twice ({fixed_options[name]!r} and {value!r}): give it once"
            )
        fixed_options[name] = value
    for name, _ in swept:
        if name in fixed_options:
            raise EntryError(f"{name} is both swept (--sweep) and fixed (--option): give it one way")
    combos = sweep_options(swept, fixed_options)
    if combos == [{}]:
        return list(entries)
    out: list[RunEntry] = []
    for entry in entries:
        if baseline:
            out.append(RunEntry.model_construct(gpu_config=entry.gpu_config, count=entry.count))
        out += [
            RunEntry.model_construct(gpu_config=entry.gpu_config, count=entry.count, options=options)
            for options in combos
        ]
    return out


def entries_text(entries: Sequence[RunEntry]) -> str:
    """`SM7_QV100x2 SM7_TITANV`: the form `--config` takes (a variant by its label)."""
    return " ".join(e.variant if e.count == 1 else f"{e.variant}x{e.count}" for e in entries)


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
    has run so far (the state column tells them apart); `-` for the sample run."""
    return [
        {
            "id": r.id,
            "state": r.state,
            "trace_id": r.trace_id,
            "sims": sims_text(r.sim_counts),
            "configs": entries_text(r.entries),
            "time": run_time(r, now),  # as the Runs screen has it: `-` for the sample run
            "age": age(r.created_at, now),
            "marks": run_mark(r),
        }
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
        {
            "id": t.id,
            "state": t.state,
            "model": t.model,
            "arch": t.trace_gpu_arch,
            "kernels": t.kernel_count,
            "size": human_bytes(t.bytes),
            "age": age(t.created_at, now),
            # a failed trace's error is the first thing to read about it, whole
            "note": t.error or ("sample" if t.sample else ""),
        }
        for t in traces
    ]


CONFIG_COLUMNS = (
    Column("name", "config"),
    Column("arch", "arch"),
    Column("core_clock_mhz", "clock", lambda mhz: f"{mhz:g} MHz", right=True),
    Column("source", "source"),
    Column("power", "power", when_any=True),
)


def config_records(configs: Sequence[GpuConfig]) -> list[Record]:
    """`source`: the simulator's own config, or one added with `cascade configs add`; `power`: it
    has an AccelWattch model (`cascade run start --power` runs on it)."""
    return [
        {
            "name": c.name,
            "arch": c.arch,
            "core_clock_mhz": c.core_clock_mhz,
            "source": "added" if c.added else "simulator",
            "power": "AccelWattch" if c.power_model else None,
        }
        for c in configs
    ]


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


# A sharded run's sims table has this column too (after the replica).
SHARD_COLUMN = Column("shard", "shard")


def sim_columns(sims: Sequence[SimSummary]) -> tuple[Column, ...]:
    """The sims table's columns: with the shard column when a sim is a shard."""
    if not any_sharded(sims):
        return SIM_COLUMNS
    return (*SIM_COLUMNS[:2], SHARD_COLUMN, *SIM_COLUMNS[2:])


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
        records.append(
            {
                "gpu_config": sim.label,
                "replica": sim.replica,
                "state": sim.state,
                "kernels": f"{sim.kernels_done}/{sim.kernels_total}",
                "cycles": sim.latest.gpu_tot_sim_cycle,
                "ipc": sim.latest.gpu_tot_ipc,
                "rate": sim.latest.sim_rate_ips,
                "elapsed": _elapsed(sim, now),
                "id": sim.id,
                "detail": detail,
                "shard": shard_cell(sim.shard),
            }
        )
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
        f"time     {run_took_text(run, now)}"
        + (f" (finished {run.finished_at:%Y-%m-%d %H:%M:%S} UTC)" if _finished_at(run) else ""),
    ]
    if any(e.shards > 1 for e in run.entries):
        lines.append(f"shards   {shards_text(run)}")
    if powered := [e.variant for e in run.entries if e.power]:
        lines.append(f"power    AccelWattch on {', '.join(dict.fromkeys(powered))}")
    if note := stand_in_note(run):
        lines.append(f"note     {note}")
    return [printable(line) for line in lines]


def shards_text(run: RunDetail) -> str:
    """`SM7_QV100: 3 shards, 1 warm-up kernel; merged: #0 15/15 succeeded`."""
    entries = ", ".join(
        f"{e.gpu_config}: {e.shards} shards, {e.warmup_kernels} warm-up kernel{'s' if e.warmup_kernels != 1 else ''}"
        for e in run.entries
        if e.shards > 1
    )
    merged = "; ".join(
        f"{p.config} #{p.replica} {p.kernels_done}/{p.kernels_total} {p.state}"
        for p in replica_progress(run.sims)
        if p.shards > 1
    )
    return f"{entries}; merged: {merged}" if merged else entries


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
        return SAMPLE_RUN_NOTE
    if reason := stand_in_reason(run, run.sims):
        return f"numbers from the stand-in simulator, not this trace ({reason})"
    return None


# --- following a run -----------------------------------------------------------------------------

BAR_MIN, BAR_MAX = 10, 24


def progress_line(run_id: str, sims: Sequence[SimSummary], columns: int | None = 80) -> str:
    """`run-… ▶ active [###xx.....]  30%  1/4 succeeded, 2 running, 1 failed`, at most
    `columns - 1` wide (a line as wide as the terminal wraps, and each redraw would add a row).
    `columns` None (not a terminal: a log file) is the plain line, without the bar and uncut.

    `#` is work that counts: succeeded sims whole, active ones as far as they got (capped: the
    stand-in can finish more kernels than the trace has); `x` is failed or cancelled sims, which
    will do no more; the percentage is the `#` share, floored. So only a run whose every sim
    succeeded reads 100%."""
    weight = {s.id: max(s.kernels_total, 1) for s in sims}
    total = sum(weight.values())
    good = sum(
        weight[s.id]
        if s.state == "succeeded"
        else 0
        if s.state in TERMINAL_SIM_STATES
        else min(s.kernels_done, weight[s.id])
        for s in sims
    )
    lost = sum(weight[s.id] for s in sims if s.state in TERMINAL_SIM_STATES and s.state != "succeeded")
    counts: dict[str, int] = {}
    for sim in sims:
        counts[sim.state] = counts.get(sim.state, 0) + 1
    head = printable(f"{run_id} {state_label(run_state(s.state for s in sims))}")
    tail = f" {math.floor(100 * good / total) if total else 0:3d}%  {sims_text(counts)}"
    if columns is None:
        return head + tail
    room = columns - 1
    width = min(BAR_MAX, room - len(head) - len(tail) - 3)
    if width < BAR_MIN:  # a narrow terminal keeps the numbers and drops the bar
        line = head + tail
    else:
        filled = math.floor(width * good / total) if total else 0
        failed = math.ceil(width * lost / total) if total else 0  # a lost sim always shows
        line = f"{head} [{'#' * filled}{'x' * failed}{'.' * (width - filled - failed)}]{tail}"
    return line if len(line) <= room else line[: room - 1] + "…"
