"""`cascade run start|show|wait|cancel|rerun|retry|delete`: one run, from a script."""

from __future__ import annotations

import argparse
import shlex
import sys

from cascade_core.arch_support import unsupported_arch_problem
from cascade_core.models import RunCreate, RunDetail, RunEntry
from cascade_core.run_actions import active_refusal
from cascade_core.shard_plan import MAX_SHARDS, MAX_WARMUP_KERNELS

from ..connection.client import CascadeClient
from ..connection.client_errors import ApiError
from ..views.output import printable, render_table
from ..views.power import COST
from ..views.power_choice import with_power as with_power_entries
from ..views.power_choice import without_model
from ..views.run_rows import sims_text
from ..views.sampling import estimate_note, sampling_text
from ..views.script_views import (
    EntryError,
    parse_entries,
    run_header,
    sim_columns,
    sim_records,
    variant_entries,
)
from .common import (
    EXIT_NOT_SUCCEEDED,
    EXIT_OK,
    EXIT_SERVER,
    RUN_EXIT_CODES_HELP,
    CommandError,
    add_connection_arguments,
    emit,
    identifier,
    int_from,
    new_parser,
    now,
    run_with_client,
    segment,
)
from .follow import wait_for_run

PROG = "cascade run"


def build_parser() -> argparse.ArgumentParser:
    parser = new_parser(PROG, "Start, follow, inspect and manage one run.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_: str, run_id: bool = True, wait: bool = False) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_, description=help_, epilog=RUN_EXIT_CODES_HELP)
        if run_id:
            sub.add_argument("run_id", metavar="RUN_ID", type=identifier)
        if wait:
            sub.add_argument(
                "--wait",
                action="store_true",
                help="follow the run to its end (progress on stderr); exit 1 unless it succeeded",
            )
        add_connection_arguments(sub)
        return sub

    start = command("start", "start a run: prints its id", run_id=False, wait=True)
    start.add_argument("--trace", required=True, metavar="TRACE_ID", type=identifier, help="a ready trace")
    start.add_argument(
        "--config",
        action="extend",
        nargs="+",
        default=[],
        metavar="NAME[xN]",
        help="a GPU config of the trace's arch, N sims of it (default 1); repeat or list "
        "several; default: the trace's suggested config",
    )
    start.add_argument(
        "--sweep",
        action="append",
        default=[],
        metavar="OPTION=V1,V2,...",
        help="one variant of each config per value of this simulator option, e.g. "
        "--sweep -gpgpu_n_clusters=4,8,16; several --sweep flags make their cross "
        "product (real simulator only)",
    )
    start.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="OPTION=VALUE",
        help="a simulator option every variant gets, e.g. --option -dram_latency=400 "
        "(the value is not split at commas)",
    )
    start.add_argument(
        "--baseline",
        action="store_true",
        help="with --sweep/--option: also run each config unmodified, the baseline "
        "results are compared against",
    )
    start.add_argument(
        "--shards",
        type=int_from(1, MAX_SHARDS),
        default=1,
        metavar="N",
        help="split each sim into N shards (1-64), each simulating a part of the trace's "
        "kernels at once; the results are merged (default 1: no split)",
    )
    start.add_argument(
        "--warmup-kernels",
        type=int_from(0, MAX_WARMUP_KERNELS),
        default=1,
        metavar="W",
        help="with --shards: kernels each shard first simulates and drops, to warm its caches (default 1)",
    )
    start.add_argument(
        "--sampling",
        choices=("none", "identical", "stratified"),
        default="none",
        help="simulate only representative kernels and estimate the rest: identical (one per set of "
        "identical kernels) or stratified (by name and instruction count); says what it saves first "
        "(default none)",
    )
    start.add_argument(
        "--power",
        action="store_true",
        help="simulate power with AccelWattch: each kernel's power and energy (configs with a power "
        "model only, `cascade configs` says which; about 2-3x the simulation time)",
    )
    start.add_argument(
        "--on-kernel-failure",
        choices=("continue", "stop"),
        default="continue",
        help="when real Accel-Sim stops on a kernel: continue (record it as failed and simulate the "
        "kernels after it) or stop (end the sim there, failed) (default continue)",
    )
    show = command("show", "the run and its sims as a plain-text table")
    show.add_argument("--json", action="store_true", help="print the API's JSON instead")
    command("wait", "follow a run to its end (progress on stderr); exit 1 unless it succeeded")
    command("cancel", "cancel every unfinished sim of the run")
    command("rerun", "start a new run of the same trace with the same configs: prints its id", wait=True)
    command(
        "retry",
        "start a new run with one sim per failed sim of this run, same configs: "
        "prints its id (a sharded run retries its failed shards in place: the same id)",
        wait=True,
    )
    command("delete", "delete a finished run with its logs, kernels and files")
    return parser


async def start(client: CascadeClient, args: argparse.Namespace) -> RunDetail:
    try:
        entries = parse_entries(args.config)
    except EntryError as exc:
        raise CommandError(str(exc)) from None
    suggested, why = None, ""
    if not entries:
        trace = await client.trace(segment(args.trace))
        if problem := await arch_problem(client, trace.trace_gpu_arch, trace.id):
            raise CommandError(problem, EXIT_SERVER)  # no config of any name would run it
        suggested = trace.suggested_sim_config
        why = "the trace's suggested config"
        if not suggested:  # as the UI's New run: a single config of the trace's arch is picked
            only = [c.name for c in await client.gpu_configs() if c.arch == trace.trace_gpu_arch]
            if len(only) != 1:
                raise CommandError(
                    f"trace {trace.id} suggests no config: give --config NAME[xN] "
                    f"({await arch_configs(client, trace.trace_gpu_arch)})"
                )
            suggested, why = only[0], f"the only {trace.trace_gpu_arch} config"
        entries = parse_entries([suggested])
    try:
        entries = variant_entries(entries, args.sweep, args.option, args.baseline)
    except EntryError as exc:
        raise CommandError(str(exc)) from None
    if args.shards != 1 or args.warmup_kernels != 1:  # the server checks the numbers (a 422 says why)
        entries = [
            e.model_copy(update={"shards": args.shards, "warmup_kernels": args.warmup_kernels})
            for e in entries
        ]
    if args.on_kernel_failure != "continue":
        entries = [e.model_copy(update={"on_kernel_failure": args.on_kernel_failure}) for e in entries]
    power_note = ""
    if args.power:  # as New run's `w`: on the configs with a power model, the others without
        entries, power_note = await with_power(client, entries)
    if args.sampling != "none":
        entries = [e.model_copy(update={"sampling": args.sampling}) for e in entries]
        trace = await client.trace(segment(args.trace))
        if figures := next((f for f in trace.sampling if f.method == args.sampling), None):
            print(printable(sampling_text(figures)), file=sys.stderr)
    try:
        run = await client.create_run(RunCreate(trace_id=args.trace, entries=entries))
    except ApiError as exc:
        if exc.status != 422 or "unknown gpu_config" not in str(exc):
            raise
        # The server's detail points at its HTTP route; a command line user gets the command.
        trace = await client.trace(segment(args.trace))
        message = str(exc).split("; GET /api/gpu-configs", 1)[0]
        raise CommandError(
            f"{message} ({await arch_configs(client, trace.trace_gpu_arch)}; "
            "`cascade configs` lists every config)",
            EXIT_SERVER,
        ) from None
    if suggested:  # said once the server took it: a refused run used no config
        print(f"config: {suggested} ({why}; --config to choose)", file=sys.stderr)
    if power_note:
        print(power_note, file=sys.stderr)
    return run


async def with_power(client: CascadeClient, entries: list[RunEntry]) -> tuple[list[RunEntry], str]:
    """`--power`: the entries with power on those whose config has an AccelWattch model, and the
    line that says so; refused when none has one."""
    configs = await client.gpu_configs()
    picked = [e.gpu_config for e in entries]
    lacking = without_model(picked, configs)
    if len(lacking) == len(set(picked)):
        arch = {c.name: c.arch for c in configs}.get(picked[0], "")
        have = sorted(c.name for c in configs if c.power_model and c.arch == arch)
        which = f"configs of its arch with one: {', '.join(have)}" if have else f"no {arch} config has one"
        raise CommandError(
            f"--power: {', '.join(lacking)} {'has' if len(lacking) == 1 else 'have'} no AccelWattch power "
            f"model, so the run would have no power; {which} (`cascade configs` lists them)",
            EXIT_SERVER,  # as the server's refusal of it
        )
    note = f"power: AccelWattch on, {COST}"
    if lacking:
        note += f"; without power (no model): {', '.join(lacking)}"
    return with_power_entries(entries, configs), note


async def arch_configs(client: CascadeClient, arch: str) -> str:
    """`sm_70: SM7_GV100, SM7_QV100`: the configs a trace of `arch` can run on."""
    names = [c.name for c in await client.gpu_configs() if c.arch == arch]
    if not names and (problem := await arch_problem(client, arch)):
        return problem
    return f"{arch}: {', '.join(names) or 'no config of this arch (`cascade configs add DIR` adds one)'}"


async def arch_problem(client: CascadeClient, arch: str, trace_id: str | None = None) -> str | None:
    """The straight answer when the server's simulator cannot run traces of `arch` at all."""
    try:
        simulator = (await client.launcher()).simulator
    except ApiError:
        return None  # the run's 422 says it anyway
    return unsupported_arch_problem(arch, simulator.archs if simulator else None, trace_id)


async def wait(client: CascadeClient, run_id: str) -> int:
    state, sims = await wait_for_run(client, run_id, sys.stderr)
    counts: dict[str, int] = {}
    for sim in sims:
        counts[sim.state] = counts.get(sim.state, 0) + 1
    print(printable(f"{run_id} {state}: {sims_text(counts)}"), file=sys.stderr)
    for sim in sims:
        if sim.state != "succeeded":
            reason = sim.error or ("exit code " + str(sim.exit_code) if sim.exit_code is not None else "")
            print(
                printable(
                    f"  {sim.label} #{sim.replica} {sim.id} {sim.state}" + (f": {reason}" if reason else "")
                ),
                file=sys.stderr,
            )
    return EXIT_OK if state == "succeeded" else EXIT_NOT_SUCCEEDED


def show(run: RunDetail, as_json: bool) -> None:
    if as_json:
        emit(run.model_dump_json(indent=2))  # as the API sends it
        return
    moment = now()
    # a sampled sim's totals are estimates: what of the trace each was simulated from
    sampled = [
        f"{sim.label} #{sim.replica}: {estimate_note(sim.sampling)}" for sim in run.sims if sim.sampling
    ]
    emit(
        "\n".join([*run_header(run, moment), *sampled])
        + "\n\n"
        + render_table(sim_columns(run.sims), sim_records(run.sims, moment))
    )


def join_option_values(argv: list[str]) -> list[str]:
    """`--sweep -gpgpu_n_clusters=20,40` as `--sweep=-gpgpu_n_clusters=20,40`: a simulator option
    starts with a dash, which argparse would take for a flag of its own."""
    out: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg in ("--sweep", "--option"):
            value = next(args, None)
            out.append(arg if value is None else f"{arg}={value}")
        else:
            out.append(arg)
    return out


def parse(argv: list[str]) -> argparse.Namespace:
    """Like `parse_args`, but a flag no command knows (`--confg`) is reported by the command it
    was given to (`cascade run start: unrecognized arguments: --confg`), with its own --help."""
    parser = build_parser()
    args, extra = parser.parse_known_args(join_option_values(argv))
    if extra:
        commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        commands.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)

    async def body(client: CascadeClient) -> int:
        run_id = segment(args.run_id) if getattr(args, "run_id", None) else None
        if args.command == "show":
            assert run_id is not None
            show(await client.run(run_id), args.json)
            return EXIT_OK
        if args.command == "wait":
            assert run_id is not None
            return await wait(client, run_id)
        if args.command == "cancel":
            assert run_id is not None
            run = await client.cancel_run(run_id)
            print(printable(f"{run.id} {run.state}: {sims_text(run.sim_counts)}"), file=sys.stderr)
            return EXIT_OK
        if args.command == "delete":
            assert run_id is not None
            try:
                await client.delete_run(run_id)
            except ApiError as exc:
                if exc.status != 409:  # 409: the run is active (the server's detail names its HTTP route)
                    raise
                raise CommandError(
                    f"409: {active_refusal(args.run_id)} (cascade run cancel {shlex.quote(args.run_id)})",
                    EXIT_SERVER,
                ) from None
            print(printable(f"deleted run {args.run_id}"), file=sys.stderr)
            return EXIT_OK
        if args.command == "start":
            new = await start(client, args)
        elif args.command == "rerun":
            assert run_id is not None
            new = await client.rerun(run_id)
        else:
            assert run_id is not None
            new = await client.retry(run_id)
        emit(new.id)  # stdout holds just the id: RUN=$(cascade run start ...)
        return await wait(client, new.id) if args.wait else EXIT_OK

    return run_with_client(f"{PROG} {args.command}", args, body)
