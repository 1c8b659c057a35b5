"""What `cascade results` prints, as records and columns (see `output`): a run's totals per config,
every kernel, every stats line, the real-vs-simulated comparison.

Records hold raw values (times in ns, mangled and demangled kernel names) so JSON and CSV are
exact; the columns say how the table shows them. Pure: no I/O, no Textual.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase

from cascade_core.models import (
    Comparison,
    KernelStat,
    RunDetail,
    RunResults,
)

from .compare import ConfigTotal, config_order, config_totals, rank, stand_in_reason
from .formatting import (
    demangle,
    fixed,
    short_kernel_name,
    si_number,
    time_ns,
)
from .output import Column, Record

# `SM7_QV100x2`: a config and how many sims run it (the count is optional, 1 by default).

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
    """What the UI's kernels view says of a config with no succeeded replica but finished
    kernels, and of one whose total leaves out kernels the simulator failed on."""
    notes = []
    if total.partial and total.median_ns is not None:
        notes.append(
            f"partial: {total.kernels_done}/{total.kernels_total} kernels, {time_ns(total.median_ns)} so far"
        )
    if coverage := total.coverage_note():
        notes.append(coverage)
    if total.estimate:
        notes.append(total.estimate)
    return "; ".join(notes) or None


def total_records(run: RunDetail, kernels: Sequence[KernelStat]) -> list[Record]:
    """Per config: the median total simulated time over succeeded replicas (with the lowest and
    highest), as a multiple of the fastest config, and the median cycles and IPC.

    A config with no succeeded replica has no total (`total_ns` is None: a script summing or
    comparing `total_ns` never takes part of a run for all of it); the running total of the
    kernels its replicas finished is `partial_ns`, and `note` says so, as the UI marks it."""
    sims = {s.id: s for s in run.sims}
    totals = config_totals(config_order((e.variant for e in run.entries), run.sims), sims, kernels)
    # Stand-in numbers describe a recording, not each config: no multiples, as in the UI.
    multiples = {} if stand_in_reason(run, run.sims) else rank(totals).multiples
    return [
        {
            "config": t.config,
            "succeeded": t.succeeded,
            "replicas": t.replicas,
            **(
                {"total_ns": None, "low_ns": None, "high_ns": None}
                if t.partial
                else {"total_ns": t.median_ns, "low_ns": t.low_ns, "high_ns": t.high_ns}
            ),
            "vs_fastest": multiples.get(t.config),
            "cycles": t.cycles,
            "ipc": t.ipc,
            "partial_ns": t.median_ns if t.partial else None,
            "note": _partial_note(t),
        }
        for t in totals
    ]


def ranking_sentence(run: RunDetail, kernels: Sequence[KernelStat]) -> str:
    if reason := stand_in_reason(run, run.sims):
        return (
            f"Stand-in numbers ({reason}): configs cannot be compared from this run, "
            "so no config is named fastest."
        )
    sims = {s.id: s for s in run.sims}
    totals = config_totals(config_order((e.variant for e in run.entries), run.sims), sims, kernels)
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
    Column("failed", "failed in the simulator", when_any=True),
    Column("estimated_from", "estimated from", lambda v: f"#{v}", right=True, when_any=True),
)


def kernel_records(run: RunDetail, kernels: Sequence[KernelStat]) -> list[Record]:
    """Every kernel every sim finished, in the API's order (config, replica, kernel)."""
    sims = {s.id: s for s in run.sims}
    records = []
    for stat in kernels:
        sim = sims.get(stat.sim_id)
        records.append(
            {
                "gpu_config": sim.label if sim else None,
                "replica": sim.replica if sim else None,
                "sim_id": stat.sim_id,
                "kernel_index": stat.kernel_index,
                # the table shortens the demangled name; `kernel` keeps it whole for scripts
                "kernel": demangle(stat.kernel_name),
                "kernel_name": stat.kernel_name,
                "sim_time_ns": stat.sim_time_ns,
                "gpu_sim_cycle": stat.gpu_sim_cycle,
                "gpu_sim_insn": stat.gpu_sim_insn,
                "gpu_ipc": stat.gpu_ipc,
                "failed": stat.failed,  # the simulator's reason; such a kernel has no results
                # a sampled sim's kernel not simulated: the representative whose numbers it takes
                "estimated_from": stat.estimated_from,
            }
        )
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
                    records.append(
                        {
                            "gpu_config": sim.sim.label,
                            "replica": sim.sim.replica,
                            "sim_id": sim.sim.id,
                            "kernel_index": stat.kernel_index,
                            "kernel": kernel,
                            "key": key,
                            "value": value,
                        }
                    )
    return records


def comparison_columns(comparison: Comparison) -> tuple[Column, ...]:
    """Kernel, real time, then one column per config (its name is the JSON / CSV field)."""
    return (
        Column("kernel_index", "k", right=True),
        Column("kernel", "kernel", short_kernel_name),
        Column("kernel_name", "mangled", in_table=False),
        Column("real_ns", "real", time_ns, right=True),
        *(Column(config, config, time_ns, right=True) for config in comparison.configs),
        Column("failed", "failed in the simulator", ", ".join, when_any=True),
    )


def comparison_records(comparison: Comparison) -> list[Record]:
    """Per kernel position: real time and each config's median simulated time, in ns."""
    return [
        {
            "kernel_index": row.kernel_index,
            "kernel": demangle(row.kernel_name),
            "kernel_name": row.kernel_name,
            "real_ns": row.real_ns,
            **{config: row.sim_ns.get(config) for config in comparison.configs},
            "failed": row.failed,  # configs whose sims the simulator failed on this kernel
        }
        for row in comparison.rows
    ]
