"""`cascade traces`: the traces, newest first, as a table or as the API's JSON;
`cascade traces --delete ID` deletes one."""

from __future__ import annotations

import sys
from typing import get_args

from pydantic import TypeAdapter

from cascade_core.models import TraceState, TraceSummary

from ..connection.client import CascadeClient
from ..views.output import printable, render_table
from ..views.script_views import TRACE_COLUMNS, trace_records
from .common import add_connection_arguments, emit, identifier, new_parser, now, run_with_client, segment
from .runs_command import add_list_arguments

PROG = "cascade traces"


def build_parser():
    parser = new_parser(
        PROG,
        "List the traces, newest first: state, model, arch, kernels, size, "
        "age, and a failed trace's error in full.",
    )
    add_list_arguments(parser, get_args(TraceState), "traces")
    parser.add_argument(
        "--delete",
        metavar="TRACE_ID",
        type=identifier,
        help="delete this ready or failed trace (its bucket objects and mirror) when no active run uses it",
    )
    add_connection_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)

    async def body(client: CascadeClient) -> int:
        if args.delete is not None:
            await client.delete_trace(segment(args.delete))
            print(printable(f"deleted trace {args.delete}"), file=sys.stderr)
            return 0
        traces = await client.traces(args.state or (), args.limit)
        if args.json:
            emit(TypeAdapter(list[TraceSummary]).dump_json(traces, indent=2).decode())  # as the API sends it
        elif traces:
            emit(render_table(TRACE_COLUMNS, trace_records(traces, now())))
        else:
            print("no traces" + (f" in state {', '.join(args.state)}" if args.state else ""), file=sys.stderr)
        return 0

    return run_with_client(PROG, args, body)
