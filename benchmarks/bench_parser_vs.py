"""The log parser of this checkout against the one of an earlier commit, timed interleaved.

On a machine shared with other work a single run of bench_parser.py says little about a 10%
difference: the load changes from one minute to the next. This script loads both parsers in one
process and alternates them (base, this, this, base in each round), so both meet the same
conditions, and prints the CPU time of one pass over the five real logs (best of --repeat
passes) and the ratio per round, then the median ratio.

    python benchmarks/bench_parser_vs.py [--base dd1cc91] [--rounds 5] [--repeat 3]

The base parser is read with `git show <base>:<path>/accelsim_log.py` (and accelsim_stats.py,
where it exists), from wherever it lived at that commit; dd1cc91 is the parser before every stats line was kept, the
speed to hold.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_parser import CLOCK_MHZ, load_lines  # noqa: E402

from cascade_server.ingest.parser import accelsim_log  # noqa: E402

# The parser's modules (before accelsim_stats.py was split off, the first was all of it), and the
# folders they have lived in, newest first.
MODULES = ("accelsim_log.py", "accelsim_stats.py")
HOMES = ("src/cascade_server/ingest/parser", "cascade_server")


def load_base(rev: str, directory: Path) -> ModuleType:
    """The parser as it was at `rev`, imported as a package of its own (its modules import
    each other relatively)."""
    package = directory / "base_parser"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for module in MODULES:
        for home in HOMES:
            shown = subprocess.run(
                ["git", "-C", str(ROOT), "show", f"{rev}:{home}/{module}"], capture_output=True, text=True
            )
            if shown.returncode == 0:  # (the models it imports have moved since some commits)
                source = shown.stdout.replace("cascade_server.models import", "cascade_core.models import")
                source = source.replace("cascade_server.shared.models import", "cascade_core.models import")
                (package / module).write_text(source)
                break
    sys.path.insert(0, str(directory))
    try:
        return importlib.import_module("base_parser.accelsim_log")
    finally:
        sys.path.remove(str(directory))


def one_pass(module: ModuleType, logs: list[tuple[float, list[list[str]]]]) -> float:
    """CPU seconds to feed every log, chunk by chunk, to a fresh parser with cold caches."""
    total = 0.0
    for clock, chunks in logs:
        gc.collect()
        getattr(
            module, "clear_cache", getattr(module, "clear_caches", lambda: None)
        )()  # the base parser's caches are its own
        parser = module.LogParser(clock)
        start = time.process_time()
        for chunk in chunks:
            parser.feed(chunk)
        total += time.process_time() - start
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="dd1cc91", help="commit of the parser to compare with")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3, help="passes per parser per half-round")
    ap.add_argument("--chunk", type=int, default=1000, help="lines per chunk (default 1000)")
    args = ap.parse_args(argv)
    if min(args.rounds, args.repeat, args.chunk) < 1:
        ap.error("--rounds, --repeat and --chunk must be at least 1")

    logs = []
    for config, clock in CLOCK_MHZ.items():
        lines = load_lines(config)
        logs.append((clock, [lines[i : i + args.chunk] for i in range(0, len(lines), args.chunk)]))
    with tempfile.TemporaryDirectory() as tmp:
        base = load_base(args.base, Path(tmp))
    this = accelsim_log
    one_pass(base, logs)  # warm-up of both
    one_pass(this, logs)

    def best(module: ModuleType) -> float:
        return min(one_pass(module, logs) for _ in range(args.repeat))

    print(
        f"CPU ms of one pass over the five logs, best of {args.repeat}; base = {args.base}; "
        "this = the working tree"
    )
    ratios = []
    for n in range(args.rounds):
        base_s = best(base)
        this_s = best(this)
        this_s = min(this_s, best(this))
        base_s = min(base_s, best(base))
        ratios.append(this_s / base_s)
        print(
            f"round {n}: base {base_s * 1e3:7.1f}  this {this_s * 1e3:7.1f}  this/base {this_s / base_s:.3f}",
            flush=True,
        )
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"median this/base {statistics.median(ratios):.3f} "
        f"(min {min(ratios):.3f}, max {max(ratios):.3f}; load average now {load})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
