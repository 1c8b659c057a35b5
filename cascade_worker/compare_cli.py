"""`cascade compare TRACE_DIR simulated_timeline.json -o compare.json`: predicted steps against
the measured ones (`cascade_server.shared.timeline.compare`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cascade_server.shared.cli_usage import OneLineErrorParser
from cascade_server.shared.timeline.compare import compare

from .timeline_files import TimelineFileError, read_json, read_step_inputs


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
    if wall["count"]:
        print(f"{wall['count']} steps: step wall error mean {wall['mean_error_pct']:+.2f}%, "
              f"mean |error| {wall['mean_abs_error_pct']:.2f}%, p95 |error| {wall['p95_abs_error_pct']:.2f}%; "
              f"wrote {args.output}")
    else:
        print(f"no step to compare; wrote {args.output}")
    return 0
