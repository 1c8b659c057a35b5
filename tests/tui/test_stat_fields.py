"""Issue 32: `cascade results --stats` gives scripts numbers: a stats line of several numbers is one
field each (`L1D_cache_core[0].Miss`), a number with a unit is the number (its unit beside it),
and of a real Accel-Sim kernel only its name stays text."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest

from cascade_core.models import GpuConfig, KernelStat, RunResults, SimResults
from cascade_server.ingest.parser.accelsim_log import LogParser
from cascade_tui.views.output import render
from cascade_tui.views.result_views import STAT_COLUMNS, stat_records
from cascade_tui.views.stat_fields import stat_fields
from tests.helpers import recorded_log

from .factories import run, sim


@pytest.mark.parametrize(
    ("key", "value", "fields"),
    [
        (
            "L1D_cache_core[0]: Access",
            "196, Miss = 193, Miss_rate = 0.985, Pending_hits = 3, Reservation_fails = 170",
            [
                ("L1D_cache_core[0].Access", 196.0, None),
                ("L1D_cache_core[0].Miss", 193.0, None),
                ("L1D_cache_core[0].Miss_rate", 0.985, None),
                ("L1D_cache_core[0].Pending_hits", 3.0, None),
                ("L1D_cache_core[0].Reservation_fails", 170.0, None),
            ],
        ),
        ("L2_BW", "18.2004 GB/Sec", [("L2_BW", 18.2004, "GB/Sec")]),
        ("gpgpu_simulation_rate", "26624 (inst/sec)", [("gpgpu_simulation_rate", 26624.0, "inst/sec")]),
        ("gpgpu_simulation_rate#2", "3073 (cycle/sec)", [("gpgpu_simulation_rate#2", 3073.0, "cycle/sec")]),
        ("gpgpu_silicon_slowdown", "368369x", [("gpgpu_silicon_slowdown", 368369.0, "x")]),
        (
            "gpgpu_simulation_time",
            "0 days, 0 hrs, 1 min, 2 sec (62 sec)",
            [("gpgpu_simulation_time", 62.0, "sec")],
        ),
        (
            "traffic_breakdown_coretomem[GLOBAL_ACC_R]",
            "16512 {8:2064,}",
            [
                ("traffic_breakdown_coretomem[GLOBAL_ACC_R]", 16512.0, None),
                ("traffic_breakdown_coretomem[GLOBAL_ACC_R]{8}", 2064.0, None),
            ],
        ),
        ("average row locality", "2056/192 = 10.708333", [("average row locality", 10.708333, None)]),
        ("min_bank_accesses#3", "0!", [("min_bank_accesses#3", 0.0, None)]),
        ("In Dram Latency Queue (total#2", "0):", [("In Dram Latency Queue (total)#2", 0.0, None)]),
        ("kernel_name", "_Z6kernelv", [("kernel_name", "_Z6kernelv", None)]),
        ("gpu_sim_cycle", 6146.0, [("gpu_sim_cycle", 6146.0, None)]),
        ("gpu_tot_ipc", "-Infinity", [("gpu_tot_ipc", -math.inf, None)]),  # as JSON carries it
        ("odd", "1, two", [("odd", "1, two", None)]),  # no known shape: as it was
    ],
)
def test_each_shape_of_stats_line_becomes_numbers(key, value, fields):
    assert stat_fields(key, value) == fields


def test_a_miss_rate_of_nan_is_a_number():
    assert math.isnan(stat_fields("x", "NaN")[0][1])  # JSON's NaN, as the API sends it
    [*_, rate, _, _] = stat_fields(
        "L1D_cache_core[16]: Access", "0, Miss = 0, Miss_rate = -nan, Pending_hits = 0, Reservation_fails = 0"
    )
    assert rate[0] == "L1D_cache_core[16].Miss_rate" and math.isnan(rate[1])


def real_results() -> RunResults:
    parsed = LogParser(1132.0).feed(recorded_log("SM7_QV100"))
    kernels = [KernelStat.model_validate(k.to_stat("sim-1").model_dump()) for k in parsed[:2]]
    the_sim = sim("sim-1", gpu_config="SM7_QV100", state="succeeded")
    the_run = run([the_sim], state="succeeded")
    return RunResults.model_construct(
        run=the_run.summary(),
        trace=None,
        sims=[
            SimResults(
                sim=the_sim,
                trace_id="t",
                gpu_config=GpuConfig(name="SM7_QV100", arch="sm_70", core_clock_mhz=1132.0),
                kernels=kernels,
                totals=the_sim.latest,
            )
        ],
        comparison=None,
    )


def test_stats_of_a_real_kernel_are_numbers_but_its_name():
    results = real_results()
    records = stat_records(results)
    text = [r for r in records if isinstance(r["value"], str)]
    assert {r["key"] for r in text} == {"kernel_name"}
    lines = sum(len(k.stats) for k in results.sims[0].kernels)
    assert len(records) > lines  # the several-number lines, one record per field
    keyed = {(r["kernel_index"], r["key"]): r for r in records}
    assert keyed[0, "L1D_cache_core[0].Miss"]["value"] == 193.0
    assert keyed[0, "L2_BW"]["unit"] == "GB/Sec" and isinstance(keyed[0, "L2_BW"]["value"], float)
    # --key matches the fields' names; CSV reads back to the same records as JSON.
    only = stat_records(results, "L1D_cache_core[[]0].*")
    assert [r["key"] for r in only if r["kernel_index"] == 0] == [
        "L1D_cache_core[0].Access",
        "L1D_cache_core[0].Miss",
        "L1D_cache_core[0].Miss_rate",
        "L1D_cache_core[0].Pending_hits",
        "L1D_cache_core[0].Reservation_fails",
    ]
    as_json = json.loads(render("json", STAT_COLUMNS, only))
    as_csv = list(csv.DictReader(io.StringIO(render("csv", STAT_COLUMNS, only))))
    assert [{k: "" if v is None else str(v) for k, v in r.items()} for r in as_json] == as_csv
    assert "unit" not in render("table", STAT_COLUMNS, only).splitlines()[0]  # none has a unit
