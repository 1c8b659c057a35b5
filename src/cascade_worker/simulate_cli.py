"""`cascade simulate TRACE_DIR SIM_RESULTS -o simulated_timeline.json`: the trace's measured steps
replayed with a sim's kernel times (`cascade_core.timeline.replay`, the `scaled-gaps` host
model). SIM_RESULTS is what `GET /api/sims/{id}/results` returns."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from cascade_core.cli_usage import OneLineErrorParser
from cascade_core.models import SimResults
from cascade_core.step_inputs import TimelineFileError, read_model, read_step_inputs
from cascade_core.timeline.formats import CorrectedTimeline, KernelMapping
from cascade_core.timeline.replay import sim_kernel_times, simulate


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog="cascade simulate",
        description="Predict the trace's steps on a simulated GPU: each measured step replayed with every "
        "mapped kernel's time replaced by the sim's (stream overlap and host gaps kept).",
    )
    parser.add_argument(
        "trace_dir",
        type=Path,
        help="the trace directory (with corrected_timeline.json "
        "and kernel_mapping.json from `cascade timeline import`)",
    )
    parser.add_argument("sim_results", type=Path, help="a sim's results JSON (GET /api/sims/{id}/results)")
    parser.add_argument(
        "-o", "--output", type=Path, required=True, help="where to write simulated_timeline.json"
    )
    parser.add_argument(
        "--gap-scale", type=float, default=1.0, help="scale the host's idle gaps by this factor (default 1.0)"
    )
    return parser


def simulate_sim(
    timeline: CorrectedTimeline, mapping: KernelMapping, results: SimResults, gap_scale: float = 1.0
) -> dict[str, Any]:
    """simulated_timeline.json for one sim (also what the worker sends)."""
    meta = {
        "run_name": results.trace_id,
        "trace_id": results.trace_id,
        "sim_id": results.sim.id,
        "gpu_config": results.gpu_config.name,
        "replica": results.sim.replica,
        "profile": timeline.source.get("profile"),
        "device": timeline.source.get("device"),
    }
    return simulate(timeline, mapping, sim_kernel_times(results.kernels), gap_scale=gap_scale, meta=meta)


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if not args.gap_scale >= 0:
        print("cascade simulate: --gap-scale must be 0 or more", file=sys.stderr)
        return 2
    try:
        timeline, mapping = read_step_inputs(args.trace_dir)
        results = read_model(args.sim_results, SimResults)
    except TimelineFileError as exc:
        print(f"cascade simulate: {exc}", file=sys.stderr)
        return 1
    simulated = simulate_sim(timeline, mapping, results, args.gap_scale)
    args.output.write_text(json.dumps(simulated, separators=(",", ":")) + "\n")
    coverage = simulated["summary"]["simulation"]["coverage"]
    print(
        f"{len(simulated['steps'])} steps, {coverage['simulated_kernels']} / {coverage['kernels']} kernels "
        f"simulated ({coverage['gpu_time_fraction'] * 100:.1f}% of the measured GPU time); wrote {args.output}"
    )
    return 0
