"""The stand-in simulator: prints a recorded real Accel-Sim log, paced like the original run.

It runs as its own process (`python -m cascade_worker.replay LOG ...`), so the worker drives it
exactly as it drives `accel-sim.out`: same pipe, same signals, same success rule. Its numbers
describe the recorded workload on the recorded config, never the user's trace.

Pacing: a real run spends its wall time simulating kernels, so each kernel gets a share of the
recorded wall time proportional to its `gpu_sim_cycle`, spread over the lines printed while it
runs (launch line through the start of its stats block: mostly `thread block = ...` lines). The
config echo and the stats blocks print at once, as they do in Accel-Sim.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from cascade_worker import replay_shard

MANIFEST = "recordings.json"
_LAUNCH = re.compile(r"^launching kernel name: ")
_STATS_START = re.compile(r"^kernel_name = ")
_CYCLES = re.compile(r"^gpu_sim_cycle = (\d+)")

# What accel-sim.out writes in its working directory in trace mode (`-enable_ptx_file_line_stats
# 1` in the tested configs): this header only.
INST_STATS_FILE = "gpgpu_inst_stats.txt"
INST_STATS_HEADER = (
    "kernel line : count latency dram_traffic smem_bk_conflicts smem_warp gmem_access_generated "
    "gmem_warp exposed_latency warp_divergence\n"
)


class RecordingError(Exception):
    pass


@dataclass(frozen=True)
class Recording:
    path: Path
    wall_seconds: float | None
    config: str | None  # the GPU config it was recorded on, when known


def find_recording(samples_dir: Path, gpu_config: str | None) -> Recording:
    """The recording for `gpu_config`, or the default one when that config has none."""
    directory = samples_dir / "recordings"
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
        recordings = manifest["recordings"]
        name = gpu_config if gpu_config in recordings else manifest["default"]
        entry = recordings[name]
        return Recording(directory / entry["log"], float(entry["wall_seconds"]), name)
    except FileNotFoundError:
        raise RecordingError(f"no recordings in {directory} (missing {MANIFEST})") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordingError(f"{directory / MANIFEST} is malformed: {exc!r}") from None


def recording_from_path(path: Path, wall_seconds: float | None) -> Recording:
    """`--replay LOG`: a log file; its wall time from `--wall-seconds` or a `wall_seconds` file
    beside it (the samples-real layout), else unknown."""
    if not path.is_file():
        raise RecordingError(f"replay log {path} does not exist")
    if wall_seconds is None:
        beside = path.parent / "wall_seconds"
        try:
            wall_seconds = float(beside.read_text().strip())
        except (OSError, ValueError):
            wall_seconds = None
    return Recording(path, wall_seconds, None)


def read_lines(path: Path) -> list[str]:
    """The log's lines, split on "\\n" only; a trailing newline does not make an extra line."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as handle:
        data = handle.read()
    text = data.decode("utf-8", errors="surrogateescape")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


# Used when the recorded wall time is unknown.
DEFAULT_WALL_SECONDS = 30.0


def pacing(lines: list[str], wall_seconds: float) -> list[float]:
    """Seconds to wait before printing each line, adding up to `wall_seconds`. Pure."""
    delays = [0.0] * len(lines)
    kernels: list[tuple[int, int, int]] = []  # (launch line, stats start line, cycles)
    launch: int | None = None
    stats_start: int | None = None
    for index, line in enumerate(lines):
        if _LAUNCH.match(line):
            launch, stats_start = index, None
        elif _STATS_START.match(line) and launch is not None and stats_start is None:
            stats_start = index
        elif stats_start is not None and launch is not None and (match := _CYCLES.match(line)):
            kernels.append((launch, stats_start, int(match.group(1))))
            launch = stats_start = None
    total_cycles = sum(cycles for _, _, cycles in kernels)
    if not lines or wall_seconds <= 0:
        return delays
    if total_cycles <= 0:
        return [wall_seconds / len(lines)] * len(lines)
    for first, last, cycles in kernels:
        share = wall_seconds * cycles / total_cycles
        busy = range(first + 1, last + 1)
        for index in busy:
            delays[index] = share / len(busy)
    return delays


def play(lines: list[str], delays: list[float], speed: float, out, workdir: Path) -> None:
    """Print the lines on schedule, flushing before every wait so the reader sees them live."""
    started = time.monotonic()
    due = 0.0
    wrote_inst_stats = False
    for line, delay in zip(lines, delays):
        due += delay / speed
        wait = due - (time.monotonic() - started)
        if wait > 0.001:
            out.flush()
            time.sleep(wait)
        if not wrote_inst_stats and _STATS_START.match(line):
            (workdir / INST_STATS_FILE).write_text(INST_STATS_HEADER)
            wrote_inst_stats = True
        out.write(line.encode("utf-8", errors="surrogateescape") + b"\n")
    out.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cascade_worker.replay",
        description="Print a recorded Accel-Sim log, paced like the original run (the stand-in simulator).",
    )
    parser.add_argument("log", type=Path, help="recorded log (plain or .gz)")
    parser.add_argument("--wall-seconds", type=float, default=None, help="the recorded run's wall time")
    parser.add_argument("--speed", type=float, default=1.0, help="play this many times faster")
    parser.add_argument(
        "--kernels",
        metavar="START-LAST",
        default=None,
        help="a shard: only these kernels' blocks (0-based positions, inclusive)",
    )
    args = parser.parse_args(argv)
    if args.speed <= 0:
        parser.error("--speed must be positive")
    try:
        kernels = replay_shard.parse_range(args.kernels) if args.kernels else None
    except ValueError as exc:
        parser.error(str(exc))
    try:
        recording = recording_from_path(args.log, args.wall_seconds)
        lines = read_lines(recording.path)
        if kernels is not None:
            lines = replay_shard.select_kernels(lines, *kernels)
    except (RecordingError, OSError) as exc:
        print(f"replay: {exc}", file=sys.stderr)
        return 1
    wall = recording.wall_seconds if recording.wall_seconds is not None else DEFAULT_WALL_SECONDS
    try:
        play(lines, pacing(lines, wall), args.speed, sys.stdout.buffer, Path.cwd())
    except BrokenPipeError:
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
