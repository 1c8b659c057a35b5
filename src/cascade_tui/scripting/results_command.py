"""`cascade results RUN_ID [--kernels | --stats [--key GLOB] | --comparison] [--format
table|json|csv]`: a run's numbers with demangled kernel names.

Default: per config, the median total simulated time over succeeded replicas, as a multiple of
the fastest. `--kernels`: every kernel every sim finished. `--stats`: every stats line of every
kernel, one row per kernel and key (`--key` keeps the keys matching a glob). `--comparison`: per
kernel, real time against each config's median simulated time. JSON and CSV carry raw values
(times in ns) and both the demangled (`kernel`) and the reported (`kernel_name`) name.
"""

from __future__ import annotations

import argparse
import sys

from ..connection.client import CascadeClient
from ..views.output import FORMATS, Column, printable, render
from ..views.result_views import (
    KERNEL_COLUMNS,
    STAT_COLUMNS,
    TOTAL_COLUMNS,
    comparison_columns,
    comparison_records,
    kernel_records,
    ranking_sentence,
    stat_records,
    total_records,
)
from ..views.script_views import stand_in_note
from .common import add_connection_arguments, emit, identifier, new_parser, run_with_client, segment

PROG = "cascade results"


def build_parser() -> argparse.ArgumentParser:
    parser = new_parser(
        PROG,
        "A run's results: per-config totals (default), every kernel, or the "
        "real-vs-simulated comparison; kernel names demangled.",
    )
    parser.add_argument("run_id", metavar="RUN_ID", type=identifier)
    view = parser.add_mutually_exclusive_group()
    view.add_argument("--kernels", action="store_true", help="every kernel every sim finished")
    view.add_argument(
        "--stats", action="store_true", help="every stats line of every kernel, one row per kernel and key"
    )
    view.add_argument(
        "--comparison",
        action="store_true",
        help="per kernel: real time and each config's median simulated time",
    )
    parser.add_argument(
        "--key",
        metavar="GLOB",
        help="with --stats: only the keys matching GLOB (e.g. 'Bank_Level_Parallism*')",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help="table (default, for reading), json or csv (raw values, times in ns)",
    )
    add_connection_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.key is not None and not args.stats:
        parser.error("--key goes with --stats")

    async def body(client: CascadeClient) -> int:
        run = await client.run(segment(args.run_id))
        # Said on stderr, so the data on stdout stays clean for scripts.
        if note := stand_in_note(run):
            print(printable(f"note: {note}"), file=sys.stderr)
        if run.state == "active":
            print(f"note: {run.id} is still active: these are the numbers so far", file=sys.stderr)
        if args.stats:
            results = await client.results(run.id)
            emit(render(args.format, STAT_COLUMNS, stat_records(results, args.key)))
            return 0
        if args.comparison:
            comparison = await client.comparison(run.id)
            emit(render(args.format, comparison_columns(comparison), comparison_records(comparison)))
            return 0
        kernels = await client.kernels(run.id)
        if args.kernels:
            emit(render(args.format, KERNEL_COLUMNS, kernel_records(run, kernels)))
            return 0
        records = total_records(run, kernels)
        columns: tuple[Column, ...] = TOTAL_COLUMNS
        if args.format == "table" and not any(r["note"] for r in records):
            columns = tuple(c for c in columns if c.key != "note")  # shown only with something to say
        emit(render(args.format, columns, records))
        if args.format == "table":
            emit(printable(ranking_sentence(run, kernels)), sys.stderr)
        return 0

    return run_with_client(PROG, args, body)
