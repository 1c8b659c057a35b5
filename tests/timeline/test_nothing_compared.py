"""A profile whose kernels map to none of the trace's: `cascade timeline import` refuses it below
--min-coverage, and a timeline that simulated nothing compares as "n/a" (null), never as 0%."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cascade_core.models import SimStepTimeline
from cascade_core.timeline.compare import compare
from cascade_core.trace_layout import CORRECTED_TIMELINE_NAME, KERNEL_MAPPING_NAME, REAL_TIMING_NAME
from cascade_tui.views.chart import plain
from cascade_tui.views.step_chart import step_lines

from .profiles import A100, SAMPLED, load, sim_results, steps_by_correlation, write_trace_dir


def _cascade(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cascade_tui.cli", *args], capture_output=True, text=True, timeout=120
    )


def _foreign_trace_dir(directory: Path) -> Path:
    """A trace of another workload: a profile step's kernels, renamed so none of the A100 profile's matches."""
    kernels = steps_by_correlation(load(SAMPLED))[0]
    renamed = [{**k, "name": f"other_workload_kernel_{n}"} for n, k in enumerate(kernels)]
    return write_trace_dir(directory, renamed)


@pytest.mark.slow
def test_import_refuses_a_profile_below_min_coverage_and_the_flag_lowers_it(tmp_path):
    trace_dir = _foreign_trace_dir(tmp_path / "trace")
    refused = _cascade("timeline", "import", str(A100), str(trace_dir))
    assert (refused.returncode, refused.stdout) == (1, ""), refused
    assert refused.stderr == (
        f"cascade timeline import: {A100}: 0 of 8,568 kernel launches (0.0%) map to the "
        "trace's kernels, below --min-coverage 50: is it a profile of the traced workload? "
        "(--min-coverage 0 imports it anyway)\n"
    )
    assert not any(
        (trace_dir / n).exists() for n in (CORRECTED_TIMELINE_NAME, KERNEL_MAPPING_NAME, REAL_TIMING_NAME)
    )
    bad = _cascade("timeline", "import", str(A100), str(trace_dir), "--min-coverage", "150")
    assert bad.returncode == 2 and "must be 0 to 100" in bad.stderr
    forced = _cascade("timeline", "import", str(A100), str(trace_dir), "--min-coverage", "0")
    assert forced.returncode == 0, forced.stderr
    assert "kernels mapped: 0 / 8568 launches (0.0%)" in forced.stdout

    # The forced import then compares nothing: `cascade simulate` and `cascade compare` say n/a.
    results = tmp_path / "results.json"
    results.write_text(sim_results([1000.0] * 577).model_dump_json())
    simulated = _cascade("simulate", str(trace_dir), str(results), "-o", str(tmp_path / "sim.json"))
    assert simulated.returncode == 0, simulated.stderr
    compared = _cascade(
        "compare", str(trace_dir), str(tmp_path / "sim.json"), "-o", str(tmp_path / "cmp.json")
    )
    assert compared.returncode == 0, compared.stderr
    assert "n/a" in compared.stdout and "0.00%" not in compared.stdout, compared.stdout
    assert compared.stdout.startswith(
        "0 of 6 steps compared (the others simulated no kernel): step wall error "
        "mean n/a, mean |error| n/a, p95 |error| n/a; wrote "
    )
    report = json.loads((tmp_path / "cmp.json").read_text())
    for summary in report["summary"].values():
        assert summary["count"] == 0 and all(v is None for k, v in summary.items() if k != "count")
    assert all(row["wall_error_pct"] is None for row in report["steps"])

    # The TUI's step pane reads the same: n/a, no 0% anywhere.
    timeline = SimStepTimeline(
        sim_id="sim-1",
        gpu_config="SM80_A100",
        replica=0,
        simulated=json.loads((tmp_path / "sim.json").read_text()),
        compare=report,
    )
    text = plain(step_lines([timeline], ["SM80_A100"], 100))
    assert "step wall error: n/a" in text and "0.0%" not in text.replace("0% of GPU time", "")


def test_a_step_that_simulated_no_kernel_is_left_out_of_the_summary(tmp_path):
    """Coverage in between: steps whose launches mapped are compared, the others are not."""
    kernels = steps_by_correlation(load(SAMPLED))[0]
    write_trace_dir(tmp_path, kernels)
    from cascade_core.timeline.formats import CorrectedTimeline, KernelMapping
    from cascade_tui.scripting import timeline_command
    from cascade_worker.compare_cli import wall_error_line
    from cascade_worker.simulate_cli import simulate_sim

    timeline_command.run_import(SAMPLED, tmp_path)
    timeline = CorrectedTimeline.model_validate_json((tmp_path / CORRECTED_TIMELINE_NAME).read_text())
    mapping = KernelMapping.model_validate_json((tmp_path / KERNEL_MAPPING_NAME).read_text())
    mapping.steps[1] = mapping.steps[1].model_copy(
        update={"kernel_ids": [None] * len(mapping.steps[1].kernel_ids)}
    )
    simulated = simulate_sim(timeline, mapping, sim_results([k["dur"] * 2000.0 for k in kernels]))
    report = compare(timeline, simulated)
    assert report["summary"]["wall_ns"]["count"] == 1
    assert report["steps"][0]["wall_error_pct"] > 5 and report["steps"][1]["wall_error_pct"] is None
    assert wall_error_line(2, report["summary"]["wall_ns"]).startswith("1 of 2 steps compared")
