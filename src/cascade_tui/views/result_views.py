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
    RunEntry,
    RunResults,
)

from .compare import ConfigTotal, config_order, config_totals, kernel_rows, rank, stand_in_reason
from .formatting import (
    demangle,
    fixed,
    short_kernel_name,
    si_number,
    time_ns,
)
from .output import Column, Record
from .power import joules, watts
from .stat_fields import stat_fields
from .sweep import is_sweep
from .sweep_records import SWEEP_COLUMNS, VS_BASE, ConfigValues, sweep_fields, vs_base

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
    # A power run's (AccelWattch): after the others, so a script reading the CSV by position
    # reads what it did; the table shows them only when some config has power.
    Column("energy_j", "energy", joules, right=True, when_any=True),
    Column("power_avg_w", "avg power", watts, right=True, when_any=True),
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


def total_columns(run: RunDetail) -> tuple[Column, ...]:
    """TOTAL_COLUMNS; a sweep's add its variant's config, option and value, and `vs_base`."""
    if not is_sweep(run.entries):
        return TOTAL_COLUMNS
    head, rest = TOTAL_COLUMNS[:1], TOTAL_COLUMNS[1:]
    at = next(i for i, c in enumerate(rest) if c.key == "vs_fastest") + 1
    return (*head, *SWEEP_COLUMNS, *rest[:at], VS_BASE, *rest[at:])


def total_records(
    run: RunDetail, kernels: Sequence[KernelStat], config_values: ConfigValues | None = None
) -> list[Record]:
    """Per config: the median total simulated time over succeeded replicas (with the lowest and
    highest), as a multiple of the fastest config, and the median cycles and IPC.

    A config with no succeeded replica has no total (`total_ns` is None: a script summing or
    comparing `total_ns` never takes part of a run for all of it); the running total of the
    kernels its replicas finished is `partial_ns`, and `note` says so, as the UI marks it.
    In a sweep (`sweep_records`) each variant's config, option and value, and its total as a
    multiple of its unmodified config's (`config_values`: the configs' own option values)."""
    sims = {s.id: s for s in run.sims}
    totals = config_totals(config_order((e.variant for e in run.entries), run.sims), sims, kernels)
    # Stand-in numbers describe a recording, not each config: no multiples, as in the UI.
    stand_in = stand_in_reason(run, run.sims)
    multiples = {} if stand_in else rank(totals).multiples
    sweep = sweep_fields(run.entries, config_values)
    whole = {t.config: t.median_ns for t in totals if not t.partial}

    def sweep_part(label: str) -> Record:
        if sweep is None:
            return {}
        ratio = None if stand_in else vs_base(sweep, label, whole.get(label), whole)
        return {**sweep.fields(label), "vs_base": ratio}

    return [
        {
            "config": t.config,
            **sweep_part(t.config),
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
            # a power config's, over the kernels with power and the same replicas as its time
            # (views/power.py)
            "energy_j": t.energy_j,
            "power_avg_w": t.power_w,
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


# A power run's kernel (AccelWattch), after every other column (a sweep's too), so a script
# reading the CSV by position reads what it did: CSV and JSON carry its figures (empty / null for
# a kernel without power), the table its average power and its energy only when some kernel has
# power. The components per AccelWattch part are in the run's results JSON (`d` on the Run screen,
# `GET /api/runs/{id}/results`), as the API has them.
KERNEL_POWER_COLUMNS = (
    Column("power_avg_w", "power", watts, right=True, when_any=True),
    Column("power_max_w", "max power", watts, right=True, in_table=False),
    Column("power_min_w", "min power", watts, right=True, in_table=False),
    Column("energy_j", "energy", joules, right=True, when_any=True),
)


def kernel_columns(run: RunDetail) -> tuple[Column, ...]:
    """KERNEL_COLUMNS; a sweep's name each row's variant, with its option and value, and give its
    time as a multiple of the unmodified config's on the same kernel (`vs_base`). Then a power
    run's figures (KERNEL_POWER_COLUMNS)."""
    if not is_sweep(run.entries):
        return (*KERNEL_COLUMNS, *KERNEL_POWER_COLUMNS)
    return (VARIANT, *SWEEP_COLUMNS, *KERNEL_COLUMNS[1:], VS_BASE, *KERNEL_POWER_COLUMNS)


# A sweep's rows say their variant first (the config is in `gpu_config`, JSON and CSV only).
VARIANT = Column("variant", "variant")


def kernel_records(
    run: RunDetail, kernels: Sequence[KernelStat], config_values: ConfigValues | None = None
) -> list[Record]:
    """Every kernel every sim finished, in the API's order (config, replica, kernel). In a
    sweep each row's variant, option and value, and `vs_base`: its time over the median time of
    the variant's unmodified config on that kernel."""
    sims = {s.id: s for s in run.sims}
    sweep = sweep_fields(run.entries, config_values)
    base_times: dict[int, dict[str, float | None]] = {}
    if sweep is not None and not stand_in_reason(run, run.sims):
        labels = config_order((e.variant for e in run.entries), run.sims)
        base_times = {row.kernel_index: row.sim_ns for row in kernel_rows(labels, sims, kernels)}
    records = []
    for stat in kernels:
        sim = sims.get(stat.sim_id)
        label = sim.label if sim else None
        record: Record = {
            "gpu_config": (sim.gpu_config if sweep else sim.label) if sim else None,
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
            # a power sim's (AccelWattch); an estimated kernel's are its representative's
            "power_avg_w": stat.power.avg_w if stat.power else None,
            "power_max_w": stat.power.max_w if stat.power else None,
            "power_min_w": stat.power.min_w if stat.power else None,
            "energy_j": stat.energy_j,
        }
        if sweep is not None and label is not None:
            times = base_times.get(stat.kernel_index, {})
            record = {"variant": label, **record, **sweep.fields(label)}
            record["vs_base"] = vs_base(sweep, label, stat.sim_time_ns, times)
        records.append(record)
    return records


STAT_COLUMNS = (
    *_KERNEL_OF_A_SIM,
    Column("key", "key"),
    Column("value", "value"),
    Column("unit", "unit", when_any=True),
)


def stat_columns(run: RunDetail) -> tuple[Column, ...]:
    """STAT_COLUMNS; a sweep's name each row's variant, option and value (as `kernel_columns`)."""
    if not is_sweep(run.entries):
        return STAT_COLUMNS
    return (VARIANT, *SWEEP_COLUMNS, *STAT_COLUMNS[1:])


def stat_records(
    results: RunResults, key_glob: str | None = None, config_values: ConfigValues | None = None
) -> list[Record]:
    """Every stats line of every kernel every sim finished, as numbers: one record per kernel
    and field (`stat_fields`: a line of several numbers is one field each, a number's unit in
    `unit`), in the block's order (repeats under `<key>#<n>`), only the fields whose key matches
    `key_glob` if given. In a sweep each row's variant, option and value too."""
    sweep = sweep_fields(results.run.entries, config_values)
    records = []
    for sim in results.sims:
        variant: Record = (
            {"variant": sim.sim.label, **sweep.fields(sim.sim.label)} if sweep is not None else {}
        )
        for stat in sim.kernels:
            kernel = demangle(stat.kernel_name)
            for line_key, line_value in stat.stats.items():
                for key, value, unit in stat_fields(line_key, line_value):
                    if key_glob is None or fnmatchcase(key, key_glob):
                        records.append(
                            {
                                **variant,
                                "gpu_config": sim.sim.gpu_config if sweep else sim.sim.label,
                                "replica": sim.sim.replica,
                                "sim_id": sim.sim.id,
                                "kernel_index": stat.kernel_index,
                                "kernel": kernel,
                                "key": key,
                                "value": value,
                                "unit": unit,
                            }
                        )
    return records


def comparison_columns(comparison: Comparison, entries: Sequence[RunEntry] = ()) -> tuple[Column, ...]:
    """Kernel, real time, then one column per config (its name is the JSON / CSV field); in a
    sweep, each variant's time as a multiple of its unmodified config's, `<variant> x base`."""
    sweep = sweep_fields(entries)
    ratios = (
        [
            Column(f"{c} x base", f"{c} x base", lambda v: f"{v:.2f}x", right=True, in_table=False)
            for c in comparison.configs
            if sweep.base_of(c) not in (None, c)
        ]
        if sweep is not None
        else []
    )
    return (
        Column("kernel_index", "k", right=True),
        Column("kernel", "kernel", short_kernel_name),
        Column("kernel_name", "mangled", in_table=False),
        Column("real_ns", "real", time_ns, right=True),
        *(Column(config, config, time_ns, right=True) for config in comparison.configs),
        *ratios,
        Column("failed", "failed in the simulator", ", ".join, when_any=True),
    )


def comparison_records(comparison: Comparison, entries: Sequence[RunEntry] = ()) -> list[Record]:
    """Per kernel position: real time and each config's median simulated time, in ns; in a
    sweep, each variant's over its unmodified config's (`comparison_columns`)."""
    sweep = sweep_fields(entries)
    records = []
    for row in comparison.rows:
        record: Record = {
            "kernel_index": row.kernel_index,
            "kernel": demangle(row.kernel_name),
            "kernel_name": row.kernel_name,
            "real_ns": row.real_ns,
            **{config: row.sim_ns.get(config) for config in comparison.configs},
            "failed": row.failed,  # configs whose sims the simulator failed on this kernel
        }
        if sweep is not None:
            for config in comparison.configs:
                if sweep.base_of(config) not in (None, config):
                    record[f"{config} x base"] = vs_base(sweep, config, row.sim_ns.get(config), row.sim_ns)
        records.append(record)
    return records
