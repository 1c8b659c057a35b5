"""The step-timeline model on the two real Kineto profiles (tests/data/profiles): import, simulate
and compare, checked against numbers taken straight from the profiles' events."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cascade_core.timeline.compare import compare
from cascade_core.timeline.formats import CorrectedTimeline, KernelMapping
from cascade_core.trace_layout import CORRECTED_TIMELINE_NAME, KERNEL_MAPPING_NAME, REAL_TIMING_NAME
from cascade_tui.scripting import timeline_command as timeline_import
from cascade_worker.simulate_cli import simulate_sim

from .profiles import (
    A100,
    SAMPLED,
    load,
    measured_wall_and_busy,
    sim_results,
    step_events,
    steps_by_correlation,
    write_trace_dir,
)


@pytest.mark.slow
@pytest.mark.parametrize("profile, counts", [(SAMPLED, [577, 577]), (A100, [1428] * 6)])
def test_steps_and_kernels_per_step_follow_the_launch_correlation(tmp_path, profile, counts):
    doc = load(profile)
    expected = steps_by_correlation(doc)
    assert [len(kernels) for kernels in expected] == counts
    write_trace_dir(tmp_path, expected[0])
    result = timeline_import.run_import(profile, tmp_path)
    steps = result.timeline.steps
    assert [s.name for s in steps] == [e["name"] for e in step_events(doc)]
    assert [len(s.kernels) for s in steps] == counts
    for step, kernels in zip(steps, expected):
        assert [k.correlation for k in step.kernels] == [k["args"]["correlation"] for k in kernels]
    assert {s.kind for s in steps} == {"step"}  # "## decoder fp8 ##" does not make a decode step
    # The trace is step 0: every launch of step 0 maps, in order.
    assert result.mapping.steps[0].kernel_ids == list(range(1, counts[0] + 1))
    for name in (CORRECTED_TIMELINE_NAME, KERNEL_MAPPING_NAME, REAL_TIMING_NAME):
        assert (tmp_path / name).is_file()
    real = json.loads((tmp_path / REAL_TIMING_NAME).read_text())
    assert len(real["kernels"]) == counts[0]
    assert all(k["duration_ns"] is not None for k in real["kernels"])


def _imported(tmp_path, profile, step: int):
    doc = load(profile)
    kernels = steps_by_correlation(doc)[step]
    write_trace_dir(tmp_path, kernels)
    timeline_import.run_import(profile, tmp_path)
    timeline = CorrectedTimeline.model_validate_json((tmp_path / CORRECTED_TIMELINE_NAME).read_text())
    mapping = KernelMapping.model_validate_json((tmp_path / KERNEL_MAPPING_NAME).read_text())
    return doc, kernels, timeline, mapping


@pytest.mark.slow
@pytest.mark.parametrize("profile, step", [(SAMPLED, 0), (SAMPLED, 1), (A100, 0), (A100, 3)])
def test_own_measured_times_reproduce_the_measured_step(tmp_path, profile, step):
    doc, kernels, timeline, mapping = _imported(tmp_path, profile, step)
    own = [k["dur"] * 1000.0 for k in kernels]
    simulated = simulate_sim(timeline, mapping, sim_results(own))
    real_wall, real_busy = measured_wall_and_busy(step_events(doc)[step], kernels)
    got = simulated["steps"][step]
    assert got["wall_ns"] == pytest.approx(real_wall, rel=0.01)
    assert got["gpu_busy_ns"] == pytest.approx(real_busy, rel=0.01)
    assert got["simulated_kernels"] == len(kernels)
    compared = compare(timeline, simulated)
    row = compared["steps"][step]
    assert abs(row["wall_error_pct"]) < 0.5 and abs(row["gpu_busy_error_pct"]) < 0.5
    assert row["real_wall_ns"] == pytest.approx(real_wall, rel=1e-6)
    # Over every step, kernels the trace does not have keep their measured time: errors stay small.
    assert compared["summary"]["wall_ns"]["count"] == len(timeline.steps)
    assert compared["summary"]["wall_ns"]["mean_abs_error_pct"] < 10


@pytest.mark.slow
@pytest.mark.parametrize("profile", [SAMPLED, A100])
def test_doubling_kernel_times_doubles_busy_time_but_not_coverage(tmp_path, profile):
    _, kernels, timeline, mapping = _imported(tmp_path, profile, 0)
    own = [k["dur"] * 1000.0 for k in kernels]
    same = simulate_sim(timeline, mapping, sim_results(own))
    doubled = simulate_sim(timeline, mapping, sim_results([2 * t for t in own]))
    step0_same, step0_doubled = same["steps"][0], doubled["steps"][0]
    # Every kernel of step 0 is mapped and twice as long: the busy time grows accordingly (host
    # gaps stay, so overlap between streams makes it a bit less than double).
    assert sum(k["duration_ns"] for k in step0_doubled["kernels"]) == pytest.approx(2 * sum(own))
    assert 1.6 * step0_same["gpu_busy_ns"] < step0_doubled["gpu_busy_ns"] <= 2 * step0_same["gpu_busy_ns"] + 1
    assert step0_doubled["wall_ns"] > step0_same["wall_ns"]
    # Coverage counts mapped kernels, not their times: doubling changes none of it.
    cover_same = same["summary"]["simulation"]["coverage"]
    cover_doubled = doubled["summary"]["simulation"]["coverage"]
    assert cover_same == cover_doubled
    assert cover_same["steps"][0]["kernel_fraction"] == 1 and cover_same["steps"][0]["gpu_time_fraction"] == 1
    # The fractions are below 1 exactly where steps have unmapped launches.
    for step_cover, step_map in zip(cover_same["steps"], mapping.steps):
        assert (step_cover["kernel_fraction"] < 1) == (step_map.unmapped > 0)
        assert (step_cover["gpu_time_fraction"] < 1) == (step_map.unmapped > 0)
    unmapped = sum(m.unmapped for m in mapping.steps)
    assert cover_same["kernels"] - cover_same["simulated_kernels"] == unmapped
    assert (cover_same["kernel_fraction"] < 1) == (unmapped > 0)
    assert cover_same["unmodeled_gpu_ns"] == pytest.approx(
        cover_same["measured_gpu_ns"] - cover_same["covered_measured_gpu_ns"]
    )


def test_summary_is_shaped_like_the_spec_example(tmp_path):
    _, kernels, timeline, mapping = _imported(tmp_path, SAMPLED, 0)
    simulated = simulate_sim(timeline, mapping, sim_results([k["dur"] * 1000.0 for k in kernels]))
    summary = simulated["summary"]
    assert list(summary) == ["simulation", "per_kind"]
    assert list(summary["simulation"]) == ["host_model", "host_fit", "coverage", "request_assumption"]
    assert summary["simulation"]["host_model"] == "scaled-gaps"
    assert summary["simulation"]["host_fit"] == {"gap_scale": 1.0}
    assert list(summary["simulation"]["coverage"]) == [
        "kernels",
        "simulated_kernels",
        "kernel_fraction",
        "gpu_time_fraction",
        "measured_gpu_ns",
        "covered_measured_gpu_ns",
        "unmodeled_gpu_ns",
        "steps",
    ]
    assert set(summary["per_kind"]) == {"step"} and summary["per_kind"]["step"]["count"] == 2
    assert simulated["requests"] == []
    compared = compare(timeline, simulated)
    fields = [
        "count",
        "mean_error",
        "mean_abs_error",
        "p50_abs_error",
        "p95_abs_error",
        "mean_error_pct",
        "mean_abs_error_pct",
        "p50_abs_error_pct",
        "p95_abs_error_pct",
    ]
    assert list(compared["summary"]) == ["wall_ns", "gpu_busy_ns"]
    assert list(compared["summary"]["wall_ns"]) == fields
    assert list(compared["steps"][0]) == [
        "index",
        "name",
        "kind",
        "real_wall_ns",
        "sim_wall_ns",
        "wall_error_pct",
        "real_gpu_busy_ns",
        "sim_gpu_busy_ns",
        "gpu_busy_error_pct",
    ]


def test_the_commands_chain_on_files(tmp_path):
    """`cascade timeline import`, `cascade simulate`, `cascade compare` as a user runs them."""
    kernels = steps_by_correlation(load(SAMPLED))[0]
    trace_dir = write_trace_dir(tmp_path / "trace", kernels)
    results = tmp_path / "results.json"
    results.write_text(sim_results([k["dur"] * 1000.0 for k in kernels]).model_dump_json())

    def cascade(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "cascade_tui.cli", *args], capture_output=True, text=True, timeout=120
        )

    imported = cascade("timeline", "import", str(SAMPLED), str(trace_dir))
    assert imported.returncode == 0, imported.stderr
    assert "steps: 2" in imported.stdout and "kernels mapped: " in imported.stdout
    assert "GPU time covered: " in imported.stdout
    simulated = cascade("simulate", str(trace_dir), str(results), "-o", str(tmp_path / "sim.json"))
    assert simulated.returncode == 0, simulated.stderr
    compared = cascade(
        "compare", str(trace_dir), str(tmp_path / "sim.json"), "-o", str(tmp_path / "cmp.json")
    )
    assert compared.returncode == 0, compared.stderr
    report = json.loads((tmp_path / "cmp.json").read_text())
    assert report["summary"]["wall_ns"]["count"] == 2
    assert abs(report["steps"][0]["wall_error_pct"]) < 0.5
    missing = cascade("simulate", str(tmp_path), str(results), "-o", str(tmp_path / "x.json"))
    assert missing.returncode == 1
    assert missing.stderr.strip().count("\n") == 0 and "no corrected_timeline.json" in missing.stderr
