"""A run that simulates power says so where runs are listed and shown (found by a new user: a
1m37s run and a 34s one of the same trace and config looked alike but for their time)."""

from __future__ import annotations

from cascade_core.models import RunEntry, SnapshotEvent
from cascade_tui.views.reducer import RunModel
from cascade_tui.views.run_rows import entries_label, header_text
from cascade_tui.views.script_views import run_header

from .factories import T0, run, sim

ENTRIES = [RunEntry(gpu_config="SM7_QV100", count=1, power=True), RunEntry(gpu_config="SM7_TITANV", count=2)]


def test_the_runs_list_and_the_run_say_which_configs_simulate_power():
    assert entries_label(ENTRIES) == "SM7_QV100 × 1 with power, SM7_TITANV × 2"
    the_run = run([sim("sim-a", gpu_config="SM7_QV100")], entries=ENTRIES)
    assert "power    AccelWattch on SM7_QV100" in run_header(the_run, T0)
    model = RunModel()
    model.apply(SnapshotEvent(run=the_run, kernels=[]))
    assert "  power  trace" in header_text("", the_run.id, model, "all", T0)


def test_a_run_without_power_reads_as_before():
    plain = [e.model_copy(update={"power": False}) for e in ENTRIES]
    assert entries_label(plain) == "SM7_QV100 × 1, SM7_TITANV × 2"
    the_run = run([sim("sim-a", gpu_config="SM7_QV100")], entries=plain)
    assert not any(line.startswith("power") for line in run_header(the_run, T0))
