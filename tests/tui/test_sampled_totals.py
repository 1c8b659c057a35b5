"""A sampled sim's totals (found by a new user): the time counted every kernel, the estimated
ones too, but the cycles and IPC were the simulator's own, over the kernels it simulated only
(150k cycles beside a full run's 170k for the same 150 µs). They count every kernel now."""

from __future__ import annotations

from cascade_core.models import SamplingInfo, SimMetrics
from cascade_tui.views import compare

from .factories import kstat, sim

INFO = SamplingInfo(
    method="identical",
    kernels=3,
    kernels_simulated=2,
    instructions=300,
    instructions_simulated=200,
    error_pct=0.0,
)


def test_a_sampled_sim_s_cycles_and_ipc_count_its_estimated_kernels():
    simulated = SimMetrics(gpu_tot_sim_cycle=300.0, gpu_tot_sim_insn=200.0, gpu_tot_ipc=0.6667)
    sampled = sim("sim-s", gpu_config="A", state="succeeded", sampling=INFO, latest=simulated)
    kernels = [
        kstat("sim-s", 0, 100.0, gpu_sim_insn=100),
        kstat("sim-s", 1, 200.0, gpu_sim_insn=100),
        kstat("sim-s", 2, 100.0, gpu_sim_insn=100, estimated_from=0),
    ]
    [total] = compare.config_totals(["A"], {"sim-s": sampled}, kernels)
    assert (total.median_ns, total.cycles) == (400.0, 400.0)
    assert total.ipc == 300 / 400


def test_a_full_sim_keeps_the_simulator_s_own_totals():
    full = sim("sim-f", gpu_config="A", state="succeeded")
    [total] = compare.config_totals(["A"], {"sim-f": full}, [kstat("sim-f", 0, 100.0)])
    assert (total.cycles, total.ipc) == (full.latest.gpu_tot_sim_cycle, full.latest.gpu_tot_ipc)


def test_a_small_saving_reads_as_a_share_a_large_one_as_a_factor():
    from cascade_tui.views.sampling import sampling_text

    small = INFO.model_copy(
        update={
            "kernels": 15,
            "kernels_simulated": 12,
            "instructions": 601_632,
            "instructions_simulated": 592_736,
        }
    )
    assert "1.5% fewer warp instructions (592,736 of 601,632)" in sampling_text(small)
    large = INFO.model_copy(update={"instructions": 2_100, "instructions_simulated": 1_000})
    assert "2.1x fewer warp instructions" in sampling_text(large)


def test_the_kernels_view_marks_an_estimated_time():
    from cascade_tui.views import chart

    sampled = sim("sim-s", gpu_config="A", state="succeeded", sampling=INFO)
    kernels = [kstat("sim-s", 0, 1000.0), kstat("sim-s", 1, 1000.0, estimated_from=0)]
    rows = compare.kernel_rows(["A"], {"sim-s": sampled}, kernels)
    totals = compare.config_totals(["A"], {"sim-s": sampled}, kernels)
    text = chart.plain(chart.chart_lines(["A"], rows, totals, compare.rank(totals), {}, False, 80))
    per_kernel = text[text.index("#0 ") :]
    simulated, estimated = (line for line in per_kernel.splitlines() if line.lstrip().startswith("A "))
    assert "~" not in simulated and estimated.endswith("~1 µs")
