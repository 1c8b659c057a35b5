"""`cascade results RUN_ID [--kernels | --stats [--key GLOB] | --comparison] [--format
table|json|csv]`: a run's numbers with demangled kernel names.

Default: per config, the median total simulated time over succeeded replicas, as a multiple of
the fastest. `--kernels`: every kernel every sim finished. `--stats`: every stats line of every
kernel, one row per kernel and number (`views/stat_fields.py`: a line of several numbers is a
field each; `--key` keeps the fields matching a glob). `--comparison`: per kernel, real time
against each config's median simulated time. JSON and CSV carry raw values (times in ns) and both
the demangled (`kernel`) and the reported (`kernel_name`) name; a sweep's rows also its variant's
config, option and value, and the multiple of the unmodified config (`views/sweep_records.py`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from cascade_core.models import RunEntry

from ..connection.client import CascadeClient
from ..connection.client_errors import ApiError
from ..views.output import FORMATS, Column, printable, render
from ..views.result_views import (
    comparison_columns,
    comparison_records,
    kernel_columns,
    kernel_records,
    ranking_sentence,
    stat_columns,
    stat_records,
    total_columns,
    total_records,
)
from ..views.script_views import stand_in_note
from ..views.sweep import is_sweep
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
        values = await config_values(client, run.entries)
        if args.stats:
            results = await client.results(run.id)
            emit(render(args.format, stat_columns(run), stat_records(results, args.key, values)))
            return 0
        if args.comparison:
            comparison = await client.comparison(run.id)
            compared = comparison_columns(comparison, run.entries)
            emit(render(args.format, compared, comparison_records(comparison, run.entries)))
            return 0
        kernels = await client.kernels(run.id)
        if args.kernels:
            emit(render(args.format, kernel_columns(run), kernel_records(run, kernels, values)))
            return 0
        records = total_records(run, kernels, values)
        columns: tuple[Column, ...] = total_columns(run)
        if args.format == "table" and not any(r["note"] for r in records):
            columns = tuple(c for c in columns if c.key != "note")  # shown only with something to say
        emit(render(args.format, columns, records))
        if args.format == "table":
            emit(printable(ranking_sentence(run, kernels)), sys.stderr)
        return 0

    return run_with_client(PROG, args, body)


async def config_values(client: CascadeClient, entries: Sequence[RunEntry]) -> dict[str, dict[str, str]]:
    """In a sweep, each varied config's own option values (the unmodified config's `value`);
    none for a run without variants, or a config the server no longer has."""
    if not is_sweep(entries):
        return {}
    values: dict[str, dict[str, str]] = {}
    for name in dict.fromkeys(e.gpu_config for e in entries if e.options):
        try:
            values[name] = {o.name: o.value for o in await client.config_options(name)}
        except ApiError:
            continue  # the base's row then has no value: everything else is still right
    return values
