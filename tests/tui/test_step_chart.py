"""The step-timeline view's lines (pure): bars per config against the real step, per-kind means,
coverage, error summary, the stand-in banner, and what it says without a timeline."""

from __future__ import annotations

from cascade_core.models import SimStepTimeline
from cascade_core.timeline.compare import compare
from cascade_core.timeline.formats import (
    CorrectedTimeline,
    KernelMapping,
    MeasuredKernel,
    MeasuredStep,
    StepMapping,
)
from cascade_core.timeline.replay import simulate
from cascade_tui.views.chart import plain
from cascade_tui.views.step_chart import NO_TIMELINE, step_lines


def _timeline(config: str, replica: int, factor: float) -> SimStepTimeline:
    steps = [
        MeasuredStep(
            index=i,
            name=f"ProfilerStep#{i}",
            kind="decode" if i else "prefill",
            cpu_start_ns=i * 2000,
            cpu_wall_ns=1000,
            kernels=[MeasuredKernel(name="k", start_ns=i * 2000 + 100, duration_ns=800, stream=7)],
        )
        for i in range(2)
    ]
    measured = CorrectedTimeline(steps=steps)
    mapping = KernelMapping(
        trace_kernels=1,
        steps=[
            StepMapping(index=i, name=s.name, kernel_ids=[1], mapped=1, unmapped=0)
            for i, s in enumerate(steps)
        ],
    )
    simulated = simulate(measured, mapping, {1: 800 * factor})
    return SimStepTimeline(
        sim_id=f"sim-{config}-{replica}",
        gpu_config=config,
        replica=replica,
        simulated=simulated,
        compare=compare(measured, simulated),
    )


def test_bars_per_step_with_errors_means_and_coverage():
    text = plain(
        step_lines(
            [_timeline("SM7_QV100", 0, 2.0), _timeline("SM7_QV100", 1, 2.0), _timeline("SM7_TITANV", 0, 0.5)],
            ["SM7_TITANV", "SM7_QV100"],
            80,
        )
    )
    lines = text.splitlines()
    assert lines[0].startswith("Predicted step wall per config")
    assert "SM7_TITANV  1 replica  2/2 kernels simulated, 100% of GPU time" in text
    assert "SM7_QV100  2 replicas" in text
    # 100 ns host gap + 1600 ns kernel + the 100 ns the CPU ran after the kernel: 1.8 us; real 1 us
    assert "  step wall error: mean +80.0%" in text
    assert "  prefill: wall 1.8 µs, GPU busy 1.6 µs  (real wall 1 µs)" in text
    assert "#0 ProfilerStep#0 (prefill)" in text and "#1 ProfilerStep#1 (decode)" in text
    real = next(line for line in lines if line.lstrip().startswith("real"))
    qv100 = next(line for line in lines if line.lstrip().startswith("SM7_QV100 ") and "µs" in line)
    assert real.rstrip().endswith("1 µs") and qv100.rstrip().endswith("+80.0%")
    assert qv100.count("█") > real.count("█")
    assert all(len(line) <= 80 for line in lines)


def test_stand_in_note_leaves_the_banner_to_the_screen_and_no_timeline():
    text = plain(
        step_lines([_timeline("SM7_QV100", 0, 1.0)], ["SM7_QV100"], 60, stand_in="a replayed recording")
    )
    assert text.startswith("The predicted steps use the recorded log's kernel times")
    assert "Stand-in numbers" not in text and "a replayed recording" not in text  # said once, above
    assert "+0.0%" in text
    assert "no step timeline" in plain(step_lines([], ["SM7_QV100"], 200, has_step_timeline=False))
    assert plain(step_lines([], ["SM7_QV100"], 200, has_step_timeline=False)) == NO_TIMELINE
    assert plain(step_lines([], ["SM7_QV100"], 200)).startswith("No step timeline yet")
