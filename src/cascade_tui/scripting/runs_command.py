"""`cascade runs`: the runs, newest first, as a table or as the API's JSON."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import get_args

from pydantic import TypeAdapter

from cascade_core.models import RunState, RunSummary

from ..connection.client import CascadeClient
from ..views.output import render_table
from ..views.script_views import RUN_COLUMNS, run_records
from .common import add_connection_arguments, emit, new_parser, now, run_with_client

PROG = "cascade runs"


def add_list_arguments(parser: argparse.ArgumentParser, states: tuple[str, ...], what: str) -> None:
    # The example is built from `states` too: a fixed one named trace states under `cascade runs`.
    example = ",".join(states[-2:])
    parser.add_argument(
        "--state",
        action="extend",
        type=state_list(states),
        metavar="STATE",
        help=f"only {what} in this state ({', '.join(states)}); several comma-separated "
        f"({example}), as the API takes them, or --state repeated",
    )
    parser.add_argument("--limit", type=positive, metavar="N", help=f"the newest N {what} only")
    parser.add_argument("--json", action="store_true", help="print the API's JSON instead of a table")


def state_list(states: tuple[str, ...]) -> Callable[[str], list[str]]:
    """`--state`'s type: one state or a comma-separated list of them (the API's own form)."""

    def parse(text: str) -> list[str]:
        given = [part.strip() for part in text.split(",")]
        for state in given:
            if state not in states:
                raise argparse.ArgumentTypeError(
                    f"invalid choice: {state!r} (choose from {', '.join(map(repr, states))})"
                )
        return given

    return parse


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = new_parser(
        PROG,
        "List the runs, newest first: state, trace, sims succeeded of all, "
        "configs (as `cascade run start --config` takes them), how long it took "
        "(or has run so far) and age.",
    )
    add_list_arguments(parser, get_args(RunState), "runs")
    add_connection_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)

    async def body(client: CascadeClient) -> int:
        runs = await client.runs(args.state or (), args.limit)
        if args.json:
            emit(TypeAdapter(list[RunSummary]).dump_json(runs, indent=2).decode())  # as the API sends it
        elif runs:
            emit(render_table(RUN_COLUMNS, run_records(runs, now())))
        else:
            print("no runs" + (f" in state {', '.join(args.state)}" if args.state else ""), file=sys.stderr)
        return 0

    return run_with_client(PROG, args, body)
