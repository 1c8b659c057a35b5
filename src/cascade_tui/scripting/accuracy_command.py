"""`cascade accuracy [--trace T] [--config C] [--format table|json|csv]`: how far the simulator
is from real hardware, per trace with real timing and per config variant (GET /api/accuracy):
kernels compared, MAPE, the signed mean error, Pearson's r of log real against log simulated
time, and the worst kernel. `--format json` prints the API's list as it is."""

from __future__ import annotations

import argparse
import sys

from ..connection.client import CascadeClient
from ..views.accuracy import ACCURACY_COLUMNS, accuracy_records, worst_lines
from ..views.output import FORMATS, printable, render, render_json
from .common import add_connection_arguments, emit, new_parser, run_with_client

PROG = "cascade accuracy"


def build_parser() -> argparse.ArgumentParser:
    parser = new_parser(
        PROG,
        "Per trace with real timing and per config variant: how far the finished real "
        "(not replayed) sims are from the real kernel times (MAPE, bias, r of log times, "
        "the worst kernels).",
    )
    parser.add_argument("--trace", metavar="TRACE_ID", help="only this trace")
    parser.add_argument("--config", metavar="NAME", help="only this config or variant label")
    parser.add_argument("--worst", action="store_true", help="with the table: list each row's worst kernels")
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help="table (default), json (the API's list as it is) or csv",
    )
    add_connection_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)

    async def body(client: CascadeClient) -> int:
        rows = await client.accuracy(args.trace, args.config)
        if args.format == "json":
            emit(render_json([row.model_dump(mode="json") for row in rows]))
            return 0
        if not rows:
            print(
                "no rows: no trace with real timing has finished real sims"
                + (" matching the filter" if args.trace or args.config else "")
                + " (`cascade timeline import` gives a trace real timing)",
                file=sys.stderr,
            )
            if args.format == "table":
                return 0
        emit(render(args.format, ACCURACY_COLUMNS, accuracy_records(rows)))
        if args.worst and args.format == "table":
            for row in rows:
                # Each line made printable on its own: printable() escapes a newline, so the
                # block's own line breaks must stay outside it.
                emit("\n" + printable(f"{row.trace_id} on {row.label}, worst kernels:"))
                for line in worst_lines(row):
                    emit(printable(line))
        return 0

    return run_with_client(PROG, args, body)
