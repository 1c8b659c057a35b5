"""Parse-only throughput of the incremental Accel-Sim log parser on the five real logs.

Feeds each log in 1,000-line chunks (what the storage layer gets from a worker) several times,
single thread, and prints the best lines/s per log and overall; then what saving the parser's
state after every chunk costs: `state()` alone and `state()` + `json.dumps` (what the storage
layer writes in the chunk's transaction).

    python benchmarks/bench_parser.py [--chunk 1000] [--repeat 7]

The logs come from shared/samples-real/runs/<CONFIG>/run.log, or from the identical copies in
samples/recordings/ when shared/ is not beside the checkout. The target is >= 1.5 million lines/s
overall on a 2-core machine. Timings on a shared machine are noisy, so the figures are the best
of the repeats (the least disturbed), in CPU time of this process (what one thread costs, even
while other processes compete for the cores) and in wall time.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cascade_server.ingest.parser.accelsim_log import LogParser, clear_cache  # noqa: E402

RUNS = ROOT.parent / "shared" / "samples-real" / "runs"
RECORDINGS = ROOT / "samples" / "recordings"
CLOCK_MHZ = {
    "SM7_QV100": 1132.0,
    "SM7_GV100": 1447.0,
    "SM7_TITANV": 1200.0,
    "SM75_RTX2060": 1365.0,
    "SM75_RTX2060_S": 1905.0,
}
TARGET_LINES_PER_S = 1_500_000


def load_lines(config: str) -> list[str]:
    path = RUNS / config / "run.log"
    data = (
        path.read_bytes()
        if path.exists()
        else gzip.decompress((RECORDINGS / f"{config}.log.gz").read_bytes())
    )
    lines = data.decode("utf-8", errors="surrogateescape").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def parse_once(clock: float, chunks: list[list[str]]) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, kernels) for one pass over the log, from cold caches (what
    the parser of a new sim meets first)."""
    clear_cache()
    parser = LogParser(clock)
    kernels = 0
    cpu, wall = time.process_time(), time.perf_counter()
    for chunk in chunks:
        kernels += len(parser.feed(chunk))
    return time.process_time() - cpu, time.perf_counter() - wall, kernels


def state_costs(clock: float, chunks: list[list[str]]) -> tuple[float, float, float, int]:
    """Mean µs of state() and of state()+json.dumps after each chunk; max JSON size in bytes."""
    clear_cache()
    parser = LogParser(clock)
    t_state = t_json = 0.0
    max_bytes = 0
    for chunk in chunks:
        parser.feed(chunk)
        t0 = time.perf_counter()
        state = parser.state()
        t1 = time.perf_counter()
        text = json.dumps(state, allow_nan=True)
        t2 = time.perf_counter()
        t_state += t1 - t0
        t_json += t2 - t0
        max_bytes = max(max_bytes, len(text))
    # Resuming from the largest kind of state (mid-block) is part of a server restart.
    t0 = time.perf_counter()
    LogParser(clock, state=json.loads(text))
    t_resume = time.perf_counter() - t0
    n = len(chunks)
    return t_state / n * 1e6, t_json / n * 1e6, t_resume * 1e6, max_bytes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chunk", type=int, default=1000, help="lines per chunk (default 1000)")
    ap.add_argument("--repeat", type=int, default=7, help="passes over each log (default 7)")
    args = ap.parse_args(argv)
    if args.chunk < 1 or args.repeat < 1:
        ap.error("--chunk and --repeat must be at least 1")

    print(f"Python {sys.version.split()[0]}, chunks of {args.chunk} lines, best of {args.repeat}")
    print(
        f"{'log':16} {'lines':>7} {'kernels':>7} {'cpu ms':>7} {'lines/s (cpu)':>14} "
        f"{'wall ms':>8} {'lines/s (wall)':>15}"
    )
    total_lines = 0
    total_cpu = total_wall = 0.0
    for config, clock in CLOCK_MHZ.items():
        lines = load_lines(config)
        chunks = [lines[i : i + args.chunk] for i in range(0, len(lines), args.chunk)]
        parse_once(clock, chunks)  # warm-up: imports, regex compilation, allocator
        cpu = wall = float("inf")
        for _ in range(args.repeat):
            gc.collect()  # start each pass from the same heap
            pass_cpu, pass_wall, kernels = parse_once(clock, chunks)
            cpu, wall = min(cpu, pass_cpu), min(wall, pass_wall)
        total_lines += len(lines)
        total_cpu += cpu
        total_wall += wall
        print(
            f"{config:16} {len(lines):7d} {kernels:7d} {cpu * 1e3:7.1f} {len(lines) / cpu:14,.0f} "
            f"{wall * 1e3:8.1f} {len(lines) / wall:15,.0f}"
        )
    overall_cpu, overall_wall = total_lines / total_cpu, total_lines / total_wall
    print(
        f"{'overall':16} {total_lines:7d} {'':7} {total_cpu * 1e3:7.1f} {overall_cpu:14,.0f} "
        f"{total_wall * 1e3:8.1f} {overall_wall:15,.0f}"
    )
    verdict = "meets" if overall_cpu >= TARGET_LINES_PER_S else "MISSES"
    print(
        f"({verdict} the {TARGET_LINES_PER_S:,} lines/s target in CPU time; "
        f"load average now {' '.join(f'{x:.2f}' for x in os.getloadavg())})"
    )

    print("\nstate() after every chunk (storage saves it with each chunk):")
    print(f"{'log':16} {'state() µs':>10} {'+json.dumps µs':>15} {'resume µs':>10} {'max JSON KB':>12}")
    for config, clock in CLOCK_MHZ.items():
        lines = load_lines(config)
        chunks = [lines[i : i + args.chunk] for i in range(0, len(lines), args.chunk)]
        t_state, t_json, t_resume, max_bytes = state_costs(clock, chunks)
        print(f"{config:16} {t_state:10.1f} {t_json:15.1f} {t_resume:10.1f} {max_bytes / 1024:12.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
