"""`cascade compare TRACE_DIR simulated_timeline.json -o compare.json`: predicted steps against
the measured ones (`cascade_core.timeline.compare`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from cascade_core.cli_usage import OneLineErrorParser
from cascade_core.step_inputs import TimelineFileError, read_json, read_step_inputs
from cascade_core.timeline.compare import compare
from cascade_core.timeline.stats import pct_text


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog="cascade compare",
        description="Per step and per request: real against simulated wall and GPU busy time, with "
        "the error summary.",
    )
    parser.add_argument("trace_dir", type=Path, help="the trace directory (with corrected_timeline.json)")
    parser.add_argument("simulated", type=Path, help="`cascade simulate`'s output")
    parser.add_argument("-o", "--output", type=Path, required=True, help="where to write compare.json")
    return parser


def wall_error_line(steps: int, wall: dict[str, Any]) -> str:
    """The step wall error of `cascade compare`'s summary; "n/a" when no step was compared."""
    compared = wall.get("count") or 0
    if steps and compared < steps:
        head = f"{compared} of {steps} steps compared (the others simulated no kernel)"
    else:
        head = f"{compared} steps"
    return (
        f"{head}: step wall error mean {pct_text(wall.get('mean_error_pct'), signed=True)}, "
        f"mean |error| {pct_text(wall.get('mean_abs_error_pct'))}, "
        f"p95 |error| {pct_text(wall.get('p95_abs_error_pct'))}"
    )


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        timeline, _ = read_step_inputs(args.trace_dir)
        simulated = read_json(args.simulated)
        if not isinstance(simulated, dict) or not isinstance(simulated.get("steps"), list):
            raise TimelineFileError(f"{args.simulated}: not a simulated timeline (no 'steps' list)")
    except TimelineFileError as exc:
        print(f"cascade compare: {exc}", file=sys.stderr)
        return 1
    result = compare(timeline, simulated)
    args.output.write_text(json.dumps(result, separators=(",", ":")) + "\n")
    wall = result["summary"]["wall_ns"]
    print(f"{wall_error_line(len(result['steps']), wall)}; wrote {args.output}")
    return 0
