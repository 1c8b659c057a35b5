"""`cascade worker`: run one sim and report it to a Cascade server.

Started by a launcher with everything in the environment, or by hand on your own host:
`cascade worker --url http://server:8000 --token ... --sim-id sim-... --gpu-config SM7_QV100`.
Flags override the environment (settings.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import shutil
import sys
from pathlib import Path

from pydantic import ValidationError

from cascade_core import power_report
from cascade_core.cli_usage import EXIT_USAGE, OneLineErrorParser, usage_error_line
from cascade_core.log_notes import parse_ranges
from cascade_core.simulator_layout import lib_dir_of
from cascade_core.variants import VariantError, parse_assignment

from . import accelsim, config_fetch, replay, shard_trace
from .client import SimClient
from .host_limits import available_memory_bytes
from .kernel_list import TraceList
from .scratch import make_scratch
from .segments import SegmentPlan
from .settings import NAMES, Options
from .sim_limits import SimLimits, default_memory_mb
from .sim_session import Worker, WorkerPlan
from .simulation import Simulation
from .trace_fetch import FetchError, NodeTrace, cache_root, has_trace

log = logging.getLogger("cascade_worker")


class UsageError(Exception):
    pass


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog="cascade worker",
        description=(
            "Run one sim: Accel-Sim when installed (CASCADE_ACCELSIM_DIR), otherwise the stand-in "
            "that replays a recorded real Accel-Sim log. The stand-in's numbers come from the "
            "recording, not from your trace. Reports heartbeats, log lines and files to the server."
        ),
    )
    env = "(env %s)"
    parser.add_argument("--url", help="the server's URL " + env % "CASCADE_URL")
    parser.add_argument("--token", help="the server's token " + env % "CASCADE_TOKEN")
    parser.add_argument("--sim-id", help="the sim to run " + env % "CASCADE_SIM_ID")
    parser.add_argument("--gpu-config", help="e.g. SM7_QV100 " + env % "CASCADE_GPU_CONFIG")
    parser.add_argument(
        "--trace-dir",
        type=Path,
        help="the trace's directory, holding traces/kernelslist.g " + env % "CASCADE_TRACE_DIR",
    )
    parser.add_argument(
        "--trace-id",
        help="the trace's id: fetched over the API into local scratch (once per node) when "
        "--trace-dir is not on this host " + env % "CASCADE_TRACE_ID",
    )
    parser.add_argument(
        "--accelsim-dir",
        type=Path,
        help="an Accel-Sim checkout with a built accel-sim.out " + env % "CASCADE_ACCELSIM_DIR",
    )
    parser.add_argument(
        "--gpu-config-dir",
        type=Path,
        help="the GPU config's files when it is not one of the simulator's own (added with "
        "`cascade configs add`) " + env % "CASCADE_GPU_CONFIG_DIR",
    )
    parser.add_argument(
        "--samples-dir", type=Path, help="where the recordings are " + env % "CASCADE_SAMPLES_DIR"
    )
    parser.add_argument(
        "--option",
        action="append",
        metavar="NAME=VALUE",
        dest="sim_options",
        help="a simulator option for accel-sim.out, after the configs, e.g. "
        "-gpgpu_n_clusters=40; repeatable " + env % "CASCADE_SIM_OPTIONS, as JSON",
    )
    parser.add_argument(
        "--replay", type=Path, metavar="LOG", help="replay this recorded log instead of simulating"
    )
    parser.add_argument("--wall-seconds", type=float, help="the recorded run's wall time, for --replay LOG")
    parser.add_argument(
        "--speed",
        type=float,
        help="replay this many times faster than recorded " + env % "CASCADE_REPLAY_SPEED",
    )
    parser.add_argument(
        "--scratch-dir",
        type=Path,
        help="parent of the worker's scratch directory " + env % "CASCADE_SCRATCH_DIR",
    )
    parser.add_argument("--keep-scratch", action="store_true", help="keep the scratch directory")
    return parser


def resolve_options(args: argparse.Namespace) -> Options:
    """Flags over `CASCADE_*` variables; raises UsageError with a message for anything missing
    or wrong."""
    flags = {
        "url": args.url,
        "token": args.token,
        "sim_id": args.sim_id,
        "gpu_config": args.gpu_config,
        "trace_dir": args.trace_dir,
        "trace_id": args.trace_id,
        "accelsim_dir": args.accelsim_dir,
        "gpu_config_dir": args.gpu_config_dir,
        "samples_dir": args.samples_dir,
        "replay": args.replay,
        "wall_seconds": args.wall_seconds,
        "speed": args.speed,
        "scratch_parent": args.scratch_dir,
        "keep_scratch": args.keep_scratch or None,
        "sim_options": option_flags(args.sim_options),
    }
    try:
        return Options(**{name: value for name, value in flags.items() if value not in (None, "")})
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        missing = [NAMES[str(e["loc"][0])] for e in errors if e["type"] == "missing"]
        if missing:
            raise UsageError("missing " + " and ".join(missing)) from None
        error = errors[0]
        name = str(error["loc"][0]) if error["loc"] else "settings"
        raise UsageError(f"{NAMES.get(name, name)}: {error['msg'].removeprefix('Value error, ')}") from None


def option_flags(flags: list[str] | None) -> dict[str, str] | None:
    """`--option -name=value` flags as a map (None without any, so the environment's count)."""
    if not flags:
        return None
    try:
        return dict(parse_assignment(flag) for flag in flags)
    except VariantError as exc:
        raise UsageError(f"--option: {exc}") from None


def simulation_for(options: Options, run_dir: Path) -> Simulation:
    """Real Accel-Sim when installed (and no --replay), else the stand-in. Raises SetupError or
    RecordingError with the reason the sim fails with."""
    if options.replay is None and accelsim.is_installed(options.accelsim_dir):
        if not options.gpu_config:
            raise accelsim.SetupError("no GPU config (set CASCADE_GPU_CONFIG or --gpu-config)")
        assert options.accelsim_dir is not None
        argv = accelsim.prepare(
            options.accelsim_dir,
            options.gpu_config,
            options.trace_dir,
            run_dir,
            {**options.sim_options, **(power_report.POWER_OPTIONS if options.power else {})},
            config_dir=options.gpu_config_dir,
        )
        if options.power and not (run_dir / power_report.MODEL_FILE).is_file():
            raise accelsim.SetupError(
                f"GPU config {options.gpu_config} has no AccelWattch power model "
                f"({power_report.MODEL_FILE}), so it cannot simulate power"
            )
        assert options.trace_dir is not None
        try:  # the sim's own kernelslist.g, next to the run directory
            trace_list = TraceList(accelsim.kernelslist(options.trace_dir))
            plan = segment_plan(options, len(trace_list))
            return Simulation(
                argv,
                trace_list,
                plan,
                lists_dir=run_dir.parent / "kernel-list",
                go_on=options.on_kernel_failure == "continue",
            )
        except (OSError, ValueError) as exc:
            raise accelsim.SetupError(f"cannot write the sim's kernelslist.g: {exc}") from None
    if options.sample is not None:
        raise accelsim.SetupError("the stand-in cannot sample kernels: it replays a recorded log")
    if options.power:
        raise accelsim.SetupError("the stand-in cannot simulate power: it replays a recorded log")
    if options.sim_options:
        raise accelsim.SetupError(
            "the stand-in cannot honour simulator options ("
            + " ".join(options.sim_options)
            + "): it replays a recorded log"
        )
    if options.replay is not None:
        recording = replay.recording_from_path(options.replay, options.wall_seconds)
    else:
        recording = replay.find_recording(options.samples_dir, options.gpu_config)
    log.info(
        "stand-in mode: replaying %s (recorded on %s), speed x%g; its numbers are the "
        "recording's, not this trace's",
        recording.path,
        recording.config or "an unknown config",
        options.speed,
    )
    argv = [
        sys.executable,
        "-m",
        "cascade_worker.replay",
        str(recording.path.resolve()),
        "--speed",
        repr(options.speed),
    ]
    if recording.wall_seconds is not None:
        argv += ["--wall-seconds", repr(recording.wall_seconds)]
    if options.shard is not None:  # only the recording's blocks of the shard's kernels
        shard = options.shard
        argv += ["--kernels", f"{shard.kernel_first - shard.warmup_kernels}-{shard.kernel_last}"]
    return Simulation(argv)


def segment_plan(options: Options, kernels: int) -> SegmentPlan:
    """The sim's kernels: a sample's (each after its warm-up kernels), a shard's range (after its
    warm-up kernels), or the whole trace."""
    if options.sample is not None:
        owned = tuple(sorted(set(parse_ranges(options.sample))))
        if owned[-1] >= kernels:
            raise ValueError(
                f"the sample names kernel {owned[-1] + 1}, but the trace lists {kernels} kernels"
            )
        warmup = options.shard.warmup_kernels if options.shard is not None else options.warmup_kernels
        return SegmentPlan(owned, warmup, sampled=True)
    shard = options.shard
    if shard is None:
        if kernels == 0:
            raise ValueError("the trace's kernelslist.g lists no kernel")
        return SegmentPlan(tuple(range(kernels)), options.warmup_kernels)
    if shard.kernel_last >= kernels:
        raise ValueError(
            f"the shard owns kernels up to position {shard.kernel_last}, but the trace lists {kernels} kernels"
        )
    return SegmentPlan(tuple(range(shard.kernel_first, shard.kernel_last + 1)), shard.warmup_kernels)


async def run(options: Options) -> int:
    scratch = make_scratch(options.sim_id, options.scratch_parent)
    plan = WorkerPlan(
        sim_id=options.sim_id,
        argv=[],
        run_dir=scratch / "run",
        scratch=scratch,
        heartbeat_interval=options.heartbeat_interval,
        kill_grace=options.kill_grace,
        give_up_after=options.give_up_after,
        keep_scratch=options.keep_scratch,
        trace_dir=options.trace_dir,
        # a shard's kernels are part of its replica's: the server builds the replica's one step
        # timeline from all its shards' kernels, so a shard sends no partial one of its own
        send_step_timeline=options.shard is None,
        kernel_wall_limit_s=options.kernel_wall_limit_s,
        limits=limits_of(options),
        log_limit_mb=options.sim_log_limit_mb,
        power=options.power,
    )
    log.info(
        "limits: memory %s, CPU time %s, files %s, log %s",
        *(
            f"{value:,g} {unit}" if value else "none"
            for value, unit in (
                (plan.limits.memory_mb, "MiB"),
                (plan.limits.cpu_s, "s"),
                (plan.limits.file_mb, "MiB"),
                (plan.log_limit_mb, "MiB"),
            )
        ),
    )
    async with SimClient(
        options.url, options.token, options.sim_id, give_up_after=options.give_up_after
    ) as client:
        worker = Worker(plan, client)
        async with contextlib.AsyncExitStack() as stack:
            try:
                if options.trace_id is not None and needs_fetch(options):
                    local = await stack.enter_async_context(
                        NodeTrace(
                            options.url, options.token, options.trace_id, cache_root(options.scratch_parent)
                        )
                    )
                    options = options.model_copy(update={"trace_dir": local})
                    plan.trace_dir = local  # with the step-timeline files, when the trace has them
                if config_fetch.needed(options):  # an added config this host cannot see
                    fetched = await config_fetch.fetch(options, scratch / "gpu-config")
                    options = options.model_copy(update={"gpu_config_dir": fetched})
                plan.simulation = simulation_for(options, plan.run_dir)
                if options.replay is None and accelsim.is_installed(options.accelsim_dir):
                    assert options.accelsim_dir is not None
                    plan.library_dir = lib_dir_of(options.accelsim_dir)
            except (
                accelsim.SetupError,
                replay.RecordingError,
                FetchError,
                config_fetch.ConfigFetchError,
            ) as exc:
                code = await worker.report_setup_failure(str(exc))
                if not options.keep_scratch:
                    shutil.rmtree(scratch, ignore_errors=True)
                return code
            if options.shard is not None:
                log.info("%s", shard_trace.describe(options.shard))
                worker.log_first(shard_trace.describe(options.shard))
            for line in plan.simulation.first_notes() if plan.simulation else []:
                worker.log_first(line)  # where a sampled sim's kernels go
            return await worker.run()
    raise AssertionError("unreachable: the exit stack never swallows an exception")


def limits_of(options: Options) -> SimLimits:
    """The sim's limits; without a memory limit set, its share of this host's memory."""
    memory = options.sim_memory_limit_mb
    if memory is None:
        memory = default_memory_mb(available_memory_bytes(), options.local_slots)
    return SimLimits(memory_mb=memory, cpu_s=options.sim_cpu_limit_s, file_mb=options.sim_file_limit_mb)


def needs_fetch(options: Options) -> bool:
    """Real Accel-Sim reads the trace; a node without the server's filesystem fetches it."""
    simulating = options.replay is None and accelsim.is_installed(options.accelsim_dir)
    return simulating and not has_trace(options.trace_dir)


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="cascade worker: %(message)s", stream=sys.stderr)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        options = resolve_options(args)
    except UsageError as exc:
        print(usage_error_line(parser.prog, str(exc)), file=sys.stderr)
        return EXIT_USAGE
    return asyncio.run(run(options))
