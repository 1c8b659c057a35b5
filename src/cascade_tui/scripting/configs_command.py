"""`cascade configs`: the GPU configs a run can use, as a table or as the API's JSON; `cascade
configs add DIR` and `cascade configs remove NAME`: configs of your own.

Adding and removing go through the server's API (`POST /api/gpu-configs`, `DELETE
/api/gpu-configs/{name}`), as every other script command does: the server owns its data
directory and its runs, checks the config with the simulator it runs, refuses to remove one an
unfinished run uses, and lists the change to every client at once. So a config can be added from
a laptop to a server on a cluster; the folder is read here and its files sent."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pydantic import TypeAdapter

from cascade_core.added_configs import MAX_FILE_BYTES, config_file_names
from cascade_core.models import GpuConfig, GpuConfigAdd

from ..connection.client import CascadeClient
from ..views.output import printable, render_table
from ..views.script_views import CONFIG_COLUMNS, config_records
from .common import CommandError, add_connection_arguments, emit, identifier, new_parser, run_with_client

PROG = "cascade configs"


def build_parser() -> argparse.ArgumentParser:
    parser = new_parser(
        PROG,
        "List the GPU configs a run can use (`cascade run start --config NAME`): "
        "name, arch, core clock, whether it was added and whether it has a power model (AccelWattch, for `--power`). A trace runs only on configs of its own arch. "
        "`cascade configs add DIR` adds a config of your own, `cascade configs remove NAME` removes one.",
    )
    parser.add_argument(
        "--arch",
        action="append",
        metavar="ARCH",
        help="only configs of this arch (sm_70, as `cascade traces` shows it); repeat for several",
    )
    parser.add_argument("--json", action="store_true", help="print the API's JSON instead of a table")
    add_connection_arguments(parser)
    # The subcommands' own flags default to "not given" (SUPPRESS): a flag given before the
    # subcommand (`cascade configs --url X add DIR`) is not reset by the subcommand's default.
    commands = parser.add_subparsers(dest="command", metavar="{add,remove}")
    add = commands.add_parser(
        "add",
        argument_default=argparse.SUPPRESS,
        help="add a GPU config of your own from a folder",
        description="Add a GPU config of your own: DIR holds its gpgpusim.config, and its trace.config "
        "and the interconnect (*.icnt) and AccelWattch (*.xml, *.csv) files it names where it has them "
        "(other files are left out). The server checks it with the simulator it runs, which must take "
        "every option, and keeps it in its data directory: it survives restarts and new simulator builds.",
    )
    add.add_argument("dir", metavar="DIR", type=Path, help="the folder holding the config's files")
    add.add_argument("--name", help="the config's name (default: DIR's name), such as SM80_A100_LAB")
    add.add_argument(
        "--arch",
        dest="add_arch",
        metavar="ARCH",
        help="the arch of the traces it runs (sm_80), when neither its compute capability "
        "(-gpgpu_compute_capability_major/minor, which wins) nor an SM<N>_ name prefix says",
    )
    add_connection_arguments(add)
    remove = commands.add_parser(
        "remove",
        argument_default=argparse.SUPPRESS,
        help="remove a config added with `cascade configs add`",
        description="Remove a config added with `cascade configs add` (never one of the simulator's own). "
        "Refused while a pending or active sim uses it; finished runs on it keep their results.",
    )
    remove.add_argument("name", metavar="NAME", type=identifier, help="the config's name")
    add_connection_arguments(remove)
    return parser


def read_config_dir(folder: Path, name: str | None, arch: str | None) -> tuple[GpuConfigAdd, list[str]]:
    """The body `POST /api/gpu-configs` takes from a folder, and the files left out of it."""
    try:
        entries = list(folder.iterdir())
        # A link is never followed: the files sent are the folder's own (a link to /etc/passwd
        # named like a config file must not reach the server, nor anyone who reads the config).
        links = sorted(p.name for p in entries if p.is_symlink())
        names = [p.name for p in entries if p.is_file() and not p.is_symlink()]
    except OSError as exc:
        raise CommandError(f"cannot read {folder}: {exc.strerror or exc}") from None
    taken, left = config_file_names(names)
    left = sorted([*left, *(f"{link} (a link: copy the file itself)" for link in links)])
    if "gpgpusim.config" not in taken:
        raise CommandError(f"{folder} has no gpgpusim.config: a GPU config's folder holds one")
    files: dict[str, str] = {}
    for file_name in taken:
        path = folder / file_name
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                raise CommandError(
                    f"{path} has more than {MAX_FILE_BYTES:,} bytes: no config file is that large"
                )
            # bytes as they are (an AccelWattch file's CRLF line ends too): the server writes them back so
            files[file_name] = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            raise CommandError(f"{path} is not text (UTF-8): config files are text") from None
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror or exc}") from None
    return GpuConfigAdd(name=name or folder.absolute().name, arch=arch, files=files), left


async def add(client: CascadeClient, args: argparse.Namespace) -> int:
    body, left = read_config_dir(args.dir, getattr(args, "name", None), getattr(args, "add_arch", None))
    config = await client.add_gpu_config(body)
    if left:
        print(printable(f"left out (not config files): {', '.join(left)}"), file=sys.stderr)
    emit(
        printable(
            f"added GPU config {config.name}: {config.arch}, {config.core_clock_mhz:g} MHz "
            f"({len(body.files)} files); runs on {config.arch} traces can use it"
        )
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    prog = f"{PROG} {args.command}" if args.command else PROG

    async def body(client: CascadeClient) -> int:
        if args.command == "add":
            return await add(client, args)
        if args.command == "remove":
            await client.remove_gpu_config(args.name)
            emit(printable(f"removed GPU config {args.name}"))
            return 0
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

    return run_with_client(prog, args, body)
