"""`cascade configs`: the GPU configs a run can use, as a table or as the API's JSON."""

from __future__ import annotations

import argparse
import sys

from pydantic import TypeAdapter

from cascade_core.models import GpuConfig

from ..connection.client import CascadeClient
from ..views.output import printable, render_table
from ..views.script_views import CONFIG_COLUMNS, config_records
from .common import add_connection_arguments, emit, new_parser, run_with_client

PROG = "cascade configs"


def build_parser() -> argparse.ArgumentParser:
    parser = new_parser(
        PROG,
        "List the GPU configs a run can use (`cascade run start --config NAME`): "
        "name, arch and core clock. A trace runs only on configs of its own arch.",
    )
    parser.add_argument(
        "--arch",
        action="append",
        metavar="ARCH",
        help="only configs of this arch (sm_70, as `cascade traces` shows it); repeat for several",
    )
    parser.add_argument("--json", action="store_true", help="print the API's JSON instead of a table")
    add_connection_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)

    async def body(client: CascadeClient) -> int:
        every = await client.gpu_configs()
        configs = [c for c in every if not args.arch or c.arch in args.arch]
        if args.json:
            emit(TypeAdapter(list[GpuConfig]).dump_json(configs, indent=2).decode())  # as the API sends it
        elif configs:
            emit(render_table(CONFIG_COLUMNS, config_records(configs)))
        elif args.arch:
            archs = ", ".join(sorted({c.arch for c in every})) or "none"
            print(printable(f"no configs of arch {', '.join(args.arch)} (archs: {archs})"), file=sys.stderr)
        else:
            print("no configs", file=sys.stderr)
        return 0

    return run_with_client(PROG, args, body)
