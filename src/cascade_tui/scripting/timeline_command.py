"""`cascade timeline import PROFILE TRACE_DIR`: real timing and the measured steps from a PyTorch
profiler (Kineto) trace, written into the trace directory next to its metadata.json:
`corrected_timeline.json`, `kernel_mapping.json` and `real_timing.json` (docs/guides/timelines.md,
"The three files"). The work is `cascade_core.timeline.importer`; this reads and writes the files."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from cascade_core.bounded_read import PROFILE_MAX_BYTES, TooLargeError, read_bounded
from cascade_core.cli_usage import OneLineErrorParser
from cascade_core.demangle import demangle
from cascade_core.timeline.importer import ImportResult, import_profile
from cascade_core.timeline.kineto import DEFAULT_STEP_PATTERN, ProfileError, decode_profile
from cascade_core.trace_kernels import KernelStatsError, read_kernels
from cascade_core.trace_layout import CORRECTED_TIMELINE_NAME, KERNEL_MAPPING_NAME, REAL_TIMING_NAME

# Below half the launches mapped, the profile is most likely of another workload (or the trace of
# another step): the step errors would mostly measure the profile against itself.
DEFAULT_MIN_COVERAGE = 50.0


class ImportFailed(Exception):
    """One line for the user."""


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(prog="cascade timeline", description="Step timelines and real timing.")
    commands = parser.add_subparsers(dest="command", required=True)
    imp = commands.add_parser(
        "import",
        prog="cascade timeline import",
        description="Read a PyTorch profiler (Kineto) trace (.json or .json.gz) and the tracer output "
        "in TRACE_DIR (its stats.csv / kernel list); write corrected_timeline.json, kernel_mapping.json "
        "and real_timing.json into TRACE_DIR, next to metadata.json.",
    )
    imp.add_argument("profile", type=Path, help="the profiler's trace, e.g. trace.json.gz")
    imp.add_argument("trace_dir", type=Path, help="the tracer's output directory")
    imp.add_argument(
        "--step-pattern",
        default=DEFAULT_STEP_PATTERN,
        metavar="REGEX",
        help=f"CPU annotations that mark a step (default: {DEFAULT_STEP_PATTERN})",
    )
    imp.add_argument(
        "--min-coverage",
        type=coverage_pct,
        default=DEFAULT_MIN_COVERAGE,
        metavar="PCT",
        help="refuse the profile when fewer than PCT%% of the kernels launched in its steps "
        f"map to the trace's kernels (default: {DEFAULT_MIN_COVERAGE:g}; 0 takes any profile): "
        "a step no kernel of which is simulated replays its measured time, and would "
        "compare as a 0%% error",
    )
    return parser


def coverage_pct(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError("must be 0 to 100 (a percentage of launches)")
    return value


def _write_json(path: Path, data: object) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    os.replace(tmp, path)


def run_import(
    profile: Path,
    trace_dir: Path,
    step_pattern: str = DEFAULT_STEP_PATTERN,
    min_coverage: float = DEFAULT_MIN_COVERAGE,
) -> ImportResult:
    """Import and write the three files; raises ImportFailed with one line, and writes nothing when
    fewer than `min_coverage` percent of the steps' launches map to the trace's kernels."""
    if not trace_dir.is_dir():
        raise ImportFailed(f"{trace_dir}: no such directory")
    try:
        kernels = read_kernels(trace_dir)
    except (KernelStatsError, OSError) as exc:
        raise ImportFailed(f"{trace_dir}: {str(exc).splitlines()[0]}") from None
    if not kernels:
        raise ImportFailed(
            f"{trace_dir}: no traced kernels (no stats.csv, stats_ctx_* or traces/kernelslist.g)"
        )
    try:
        raw = read_bounded(profile, PROFILE_MAX_BYTES, str(profile), decompress=False)  # gzip: decode_profile
    except TooLargeError as exc:
        raise ImportFailed(f"{exc} (real profiles are tens of MB)") from None
    except OSError as exc:
        raise ImportFailed(f"{profile}: {exc.strerror or exc}") from None
    try:
        result = import_profile(
            decode_profile(raw),
            [(k.kernel_id, k.name) for k in kernels],
            demangle,
            step_pattern=step_pattern,
            source={"profile": profile.name},
        )
    except ProfileError as exc:
        raise ImportFailed(f"{profile}: {exc}") from None
    coverage = 100.0 * result.mapped / result.launches if result.launches else 0.0
    if coverage < min_coverage:
        raise ImportFailed(
            f"{profile}: {result.mapped:,} of {result.launches:,} kernel launches ({coverage:.1f}%) map to "
            f"the trace's kernels, below --min-coverage {min_coverage:g}: is it a profile of the traced "
            "workload? (--min-coverage 0 imports it anyway)"
        )
    _write_json(trace_dir / CORRECTED_TIMELINE_NAME, result.timeline.model_dump(mode="json"))
    _write_json(trace_dir / KERNEL_MAPPING_NAME, result.mapping.model_dump(mode="json"))
    _write_json(trace_dir / REAL_TIMING_NAME, result.real_timing.model_dump(mode="json"))
    return result


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        result = run_import(args.profile, args.trace_dir, args.step_pattern, args.min_coverage)
    except ImportFailed as exc:
        print(f"cascade timeline import: {exc}", file=sys.stderr)
        return 1
    for line in result.summary_lines():
        print(line)
    print(f"wrote {CORRECTED_TIMELINE_NAME}, {KERNEL_MAPPING_NAME}, {REAL_TIMING_NAME} in {args.trace_dir}")
    return 0
