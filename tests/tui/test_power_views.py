"""Issue 34's views, pure: watts and joules, each kernel's power in the kernels view (a column only
when some kernel has power, `~` on an estimated kernel, `—` on a power sim's kernel without), each
config's energy and average power under the totals (a sweep's by the swept value), the live
`kernel_power` event reaching them through the run model, `cascade results` exports (CSV fields
after the others, JSON as the API has it), and the runs comparison."""

from __future__ import annotations

import csv
import io
import json

import pytest

from cascade_core.models import (
    KernelEvent,
    KernelPower,
    KernelPowerAt,
    KernelPowerEvent,
    KernelStat,
    RunEntry,
    SnapshotEvent,
)
from cascade_core.variants import default_label
from cascade_tui.views import chart, compare, power, runcompare, sweep
from cascade_tui.views.output import render
from cascade_tui.views.reducer import RunModel
from cascade_tui.views.result_views import kernel_columns, kernel_records, total_columns, total_records

from .factories import kstat, run, sim

QV, TV = "SM7_QV100", "SM7_TITANV"
P57 = KernelPower(avg_w=57.3, max_w=70.9, min_w=55.5, components={"DRAMP": 12.5, "CONSTP": 44.8})
P80 = KernelPower(avg_w=80.0, max_w=91.0, min_w=60.0)
TIMES = [5000.0, 10_000.0, 20_000.0]  # ns, per kernel


def powered(sim_id: str, index: int, ns: float, p: KernelPower | None, **kw) -> KernelStat:
    """A kernel as the API sends a power sim's: its power and the energy it comes to."""
    return kstat(sim_id, index, ns, power=p, energy_j=p.energy_j(ns) if p else None, **kw)


def power_run():
    """QV100 simulates power (kernel 1 got none from the report, kernel 2 is estimated from
    kernel 0), TITANV does not; both succeeded."""
    sims = [
        sim("s-qv", gpu_config=QV, state="succeeded", power=True, kernels_done=3, kernels_total=3),
        sim("s-tv", gpu_config=TV, state="succeeded", kernels_done=3, kernels_total=3),
    ]
    kernels = [
        powered("s-qv", 0, TIMES[0], P57),
        powered("s-qv", 1, TIMES[1], None),
        powered("s-qv", 2, TIMES[2], P80, estimated_from=0),
        *(kstat("s-tv", i, ns * 0.8) for i, ns in enumerate(TIMES)),
    ]
    return run(sims, state="succeeded"), kernels


def kernels_view(detail, kernels, width: int = 78) -> str:
    sims = {s.id: s for s in detail.sims}
    configs = compare.config_order((e.variant for e in detail.entries), detail.sims)
    rows = compare.kernel_rows(configs, sims, kernels)
    totals = compare.config_totals(configs, sims, kernels)
    lines = chart.chart_lines(
        configs,
        rows,
        totals,
        compare.rank(totals),
        compare.mape(rows, configs),
        False,
        width,
        sweep=sweep.sweep_view(detail.entries, totals),
        power=power.kernel_power(sims, kernels),
    )
    assert all(sum(len(t) for t, _ in line) <= width for line in lines)
    return chart.plain(lines)


# --- units ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("joules", "text"),
    [(1.234, "1.23 J"), (0.00123, "1.23 mJ"), (0.000285, "285 µJ"), (4.2e-8, "42 nJ"), (0.0, "0 nJ")],
)
def test_energy_reads_in_the_unit_that_fits(joules, text):
    assert power.joules(joules) == text


def test_power_is_watts_to_a_tenth():
    assert power.watts(57.26) == "57.3 W"


# --- the kernels view -----------------------------------------------------------------------------


def test_the_kernels_view_gives_each_kernel_its_power_and_each_config_its_energy():
    detail, kernels = power_run()
    text = kernels_view(detail, kernels)
    lines = text.splitlines()
    kernel_0 = lines[lines.index(next(line for line in lines if line.startswith("#0"))) + 1]
    assert kernel_0.startswith("  SM7_QV100") and kernel_0.endswith("57.3 W"), text
    kernel_1 = lines[lines.index(next(line for line in lines if line.startswith("#1"))) + 1]
    assert kernel_1.endswith("—"), text  # a power sim's kernel the report had no power for
    kernel_2 = lines[lines.index(next(line for line in lines if line.startswith("#2"))) + 1]
    assert kernel_2.endswith("~80.0 W"), text  # estimated: its representative's, marked
    titanv = [line for line in lines if line.startswith("  SM7_TITANV") and "µs" in line]
    assert titanv and not any("W" in line for line in titanv), text  # no power sim: blank
    # the energy: 57.3 W x 5 µs + 80 W x 20 µs; the average over those 25 µs
    energy = P57.avg_w * 5e-6 + P80.avg_w * 20e-6
    assert "Energy per config  (AccelWattch; average power over the kernels with power)" in text
    qv = next(line for line in lines if line.startswith("  SM7_QV100") and "energy" in line)
    assert qv.split() == [
        QV,
        "energy",
        *power.joules(energy).split(),
        "avg",
        *power.watts(energy / 25e-6).split(),
        "1",
        "kernel",
        "without",
        "power",
    ]
    assert "  SM7_TITANV no power simulated" in text


def test_a_run_without_power_shows_no_power_at_all():
    sims = [sim("s-qv", gpu_config=QV, state="succeeded", kernels_done=3, kernels_total=3)]
    text = kernels_view(run(sims, state="succeeded"), [kstat("s-qv", i, ns) for i, ns in enumerate(TIMES)])
    assert " W" not in text and "Energy" not in text and "—" not in text


def test_energy_is_the_median_over_succeeded_replicas_as_the_time_is():
    sims = [
        sim(
            f"s-{r}", gpu_config=QV, replica=r, state="succeeded", power=True, kernels_done=1, kernels_total=1
        )
        for r in range(3)
    ]
    sims.append(
        sim("s-3", gpu_config=QV, replica=3, state="failed", power=True, kernels_done=1, kernels_total=1)
    )
    watts = [50.0, 60.0, 70.0, 500.0]  # the failed replica's is not counted
    kernels = [powered(s.id, 0, 1000.0, KernelPower(avg_w=w, max_w=w, min_w=w)) for s, w in zip(sims, watts)]
    [total] = compare.config_totals([QV], {s.id: s for s in sims}, kernels)
    assert (
        total.power and total.energy_j == pytest.approx(60.0 * 1e-6) and total.power_w == pytest.approx(60.0)
    )


def test_the_live_kernel_power_event_reaches_the_kernels_view():
    detail, kernels = power_run()
    bare = [k.model_copy(update={"power": None, "energy_j": None}) for k in kernels]
    model = RunModel()
    model.apply(SnapshotEvent(run=detail, kernels=[]))
    for stat in bare:
        model.apply(KernelEvent(sim_id=stat.sim_id, stat=stat))
    model.take_changes()
    before = kernels_view(detail, model.all_kernels())
    assert "energy" not in before and "57.3 W" not in before
    assert "  SM7_QV100  —" in before  # a power sim whose power is still to come
    model.apply(
        KernelPowerEvent(
            sim_id="s-qv",
            kernels=[KernelPowerAt(kernel_index=0, power=P57), KernelPowerAt(kernel_index=2, power=P80)],
        )
    )
    assert model.take_changes().kernels  # the kernels pane draws again
    after = kernels_view(detail, model.all_kernels())
    assert "57.3 W" in after and "energy " + power.joules(P57.avg_w * 5e-6 + P80.avg_w * 20e-6) in after


def test_a_sweep_gives_energy_and_power_against_the_swept_value():
    entries = [RunEntry(gpu_config=QV, count=1, power=True)] + [
        RunEntry(
            gpu_config=QV,
            count=1,
            options={"-gpgpu_n_clusters": n},
            label=default_label(QV, {"-gpgpu_n_clusters": n}),
            power=True,
        )
        for n in ("80", "20", "40")
    ]
    labels = [e.variant for e in entries]
    sims = [
        sim(f"s-{i}", gpu_config=QV, label=label, options=e.options, state="succeeded", power=True)
        for i, (label, e) in enumerate(zip(labels, entries))
    ]
    watts = {0: 60.0, 1: 90.0, 2: 40.0, 3: 55.0}
    kernels = [powered(f"s-{i}", 0, 1000.0, KernelPower(avg_w=w, max_w=w, min_w=w)) for i, w in watts.items()]
    assert sweep.swept_value_order(sweep.variants(entries)) == [labels[0], labels[2], labels[3], labels[1]]
    text = kernels_view(run(sims, entries=entries, state="succeeded"), kernels)
    block = text.split("Energy per variant", 1)[1].splitlines()[1:5]
    assert [line.split()[0] for line in block] == [
        QV,
        "gpgpu_n_clusters=20",
        "gpgpu_n_clusters=40",
        "gpgpu_n_clusters=80",
    ], text
    assert [line.split()[-2] for line in block] == ["60.0", "40.0", "55.0", "90.0"]

    records = total_records(run(sims, entries=entries, state="succeeded"), kernels)
    by_value = {r["option_value"]: (r["energy_j"], r["power_avg_w"]) for r in records}
    assert by_value[20.0] == (pytest.approx(40.0 * 1e-6), pytest.approx(40.0))
    assert by_value[80.0] == (pytest.approx(90.0 * 1e-6), pytest.approx(90.0))


# --- exports --------------------------------------------------------------------------------------


def csv_text(value: object) -> str:
    """A JSON value as the CSV writes it (as tests/e2e/test_cli_commands.py reads it back)."""
    return "" if value is None else str(value)


def test_the_kernel_csv_has_the_power_fields_after_the_others_and_json_the_same_records():
    detail, kernels = power_run()
    columns = kernel_columns(detail)
    records = kernel_records(detail, kernels)
    rows = list(csv.DictReader(io.StringIO(render("csv", columns, records))))
    assert list(rows[0])[-4:] == ["power_avg_w", "power_max_w", "power_min_w", "energy_j"]
    first = rows[0]
    assert (first["power_avg_w"], first["power_max_w"], first["power_min_w"]) == ("57.3", "70.9", "55.5")
    assert float(first["energy_j"]) == pytest.approx(57.3 * 5e-6)
    no_power = [r for r in rows if r["sim_id"] == "s-tv" or r["kernel_index"] == "1"]
    assert len(no_power) == 4 and all(r[k] == "" for r in no_power for k in list(r)[-4:])
    # JSON carries the same records (a script may take either): the figures, null when none
    docs = json.loads(render("json", columns, records))
    assert [{k: csv_text(v) for k, v in d.items()} for d in docs] == rows
    assert docs[2]["power_avg_w"] == 80.0 and docs[2]["estimated_from"] == 0
    assert docs[1]["power_avg_w"] is None and docs[1]["energy_j"] is None

    table = render("table", columns, records).splitlines()
    # an estimated kernel's power is its representative's, and its row says whose
    assert table[0].endswith("estimated from   power  energy"), table[0]
    assert table[1].endswith("57.3 W  287 µJ") and table[3].endswith("#0  80.0 W  1.6 mJ"), table
    assert table[2].endswith("-       -")  # the table's mark for none, as in every column


def test_a_sweeps_kernel_csv_has_the_power_fields_last_too():
    entries = [
        RunEntry(gpu_config=QV, count=1),
        RunEntry(gpu_config=QV, count=1, options={"-gpgpu_n_clusters": "40"}, label="QV-40"),
    ]
    header = [c.key for c in kernel_columns(run([], entries=entries))]
    assert header[-5:] == ["vs_base", "power_avg_w", "power_max_w", "power_min_w", "energy_j"]


def test_a_run_without_power_exports_empty_power_fields_and_its_tables_as_before():
    sims = [sim("s-qv", gpu_config=QV, state="succeeded", kernels_done=3, kernels_total=3)]
    detail = run(sims, state="succeeded")
    kernels = [kstat("s-qv", i, ns) for i, ns in enumerate(TIMES)]
    records = kernel_records(detail, kernels)
    assert all(r["power_avg_w"] is None and r["energy_j"] is None for r in records)
    table = render("table", kernel_columns(detail), records)
    assert "power" not in table and "energy" not in table
    rows = list(csv.DictReader(io.StringIO(render("csv", kernel_columns(detail), records))))
    assert all(r["power_avg_w"] == r["energy_j"] == "" for r in rows)
    totals = total_records(detail, kernels)
    assert "energy" not in render("table", total_columns(detail), totals)


def test_the_totals_export_has_each_configs_energy_and_average_power():
    detail, kernels = power_run()
    records = {r["config"]: r for r in total_records(detail, kernels)}
    assert records[QV]["energy_j"] == pytest.approx(57.3 * 5e-6 + 80 * 20e-6)
    assert records[QV]["power_avg_w"] == pytest.approx(records[QV]["energy_j"] / 25e-6)
    assert records[TV]["energy_j"] is None and records[TV]["power_avg_w"] is None
    table = render("table", total_columns(detail), list(records.values()))
    assert table.splitlines()[0].split()[-3:] == ["energy", "avg", "power"]
    assert table.splitlines()[1].endswith("1.89 mJ     75.5 W"), table
    header = next(csv.reader(io.StringIO(render("csv", total_columns(detail), list(records.values())))))
    assert header[-3:] == ["note", "energy_j", "power_avg_w"]


# --- compare runs ---------------------------------------------------------------------------------


def test_compared_runs_say_each_configs_energy_and_average_power_with_the_ratio():
    detail, kernels = power_run()
    later = detail.model_copy(update={"id": "run-000000000002"})
    faster = [k.model_copy(update={"energy_j": k.energy_j / 2}) if k.energy_j else k for k in kernels]
    text = "\n".join(
        runcompare.lines([runcompare.RunData(detail, kernels), runcompare.RunData(later, faster)], width=80)
    )
    assert "Energy and average power per config (AccelWattch" in text
    row = next(line for line in text.splitlines() if line.startswith(QV) and "mJ" in line)
    assert row.endswith("0.500x"), text
    assert not any(line.startswith(TV) and "J" in line for line in text.splitlines())
    assert max(len(line) for line in text.splitlines()) <= 80


def test_compared_runs_without_power_have_no_energy():
    sims = [sim("s-qv", gpu_config=QV, state="succeeded", kernels_done=3, kernels_total=3)]
    data = runcompare.RunData(
        run(sims, state="succeeded"), [kstat("s-qv", i, ns) for i, ns in enumerate(TIMES)]
    )
    assert "Energy" not in "\n".join(runcompare.lines([data, data]))
