"""`cascade worker`: run one sim and report it to a Cascade server.

Started by a launcher with everything in the environment, or by hand on your own host:
`cascade worker --url http://server:8000 --token ... --sim-id sim-... --gpu-config SM7_QV100`.
Flags override the environment.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import logging
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from . import accelsim, replay
from .client import SimClient
from .runner import EXIT_SETUP, Worker, WorkerPlan, make_scratch
from .trace_fetch import FetchError, NodeTrace, cache_root, has_trace

log = logging.getLogger("cascade_worker")

# The repo's samples/, next to this package (an editable install or a source checkout).
DEFAULT_SAMPLES_DIR = Path(__file__).resolve().parent.parent / "samples"


class UsageError(Exception):
    pass


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
    parser.add_argument("--trace-dir", type=Path,
                        help="the trace's directory, holding traces/kernelslist.g " + env % "CASCADE_TRACE_DIR")
    parser.add_argument("--trace-id",
                        help="the trace's id: fetched over the API into local scratch (once per node) when "
                        "--trace-dir is not on this host " + env % "CASCADE_TRACE_ID")
    parser.add_argument("--accelsim-dir", type=Path,
                        help="an Accel-Sim checkout with a built accel-sim.out " + env % "CASCADE_ACCELSIM_DIR")
    parser.add_argument("--samples-dir", type=Path,
                        help="where the recordings are " + env % "CASCADE_SAMPLES_DIR")
    parser.add_argument("--replay", type=Path, metavar="LOG",
                        help="replay this recorded log instead of simulating")
    parser.add_argument("--wall-seconds", type=float,
                        help="the recorded run's wall time, for --replay LOG")
    parser.add_argument("--speed", type=float,
                        help="replay this many times faster than recorded " + env % "CASCADE_REPLAY_SPEED")
    parser.add_argument("--scratch-dir", type=Path,
                        help="parent of the worker's scratch directory " + env % "CASCADE_SCRATCH_DIR")
    parser.add_argument("--keep-scratch", action="store_true", help="keep the scratch directory")
    return parser


@dataclass(frozen=True)
class Options:
    url: str
    token: str | None
    sim_id: str
    gpu_config: str | None
    trace_dir: Path | None
    trace_id: str | None
    accelsim_dir: Path | None
    samples_dir: Path
    replay: Path | None
    wall_seconds: float | None
    speed: float
    scratch_parent: Path | None
    keep_scratch: bool
    heartbeat_interval: float
    kill_grace: float
    give_up_after: float


def _env_float(env: dict[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw in (None, ""):
        return default
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"{name} must be a number, not {raw!r}") from None
    if value <= 0:
        raise UsageError(f"{name} must be positive")
    return value


def _path(value: Path | None, env: dict[str, str], name: str) -> Path | None:
    if value is not None:
        return value
    raw = env.get(name)
    return Path(raw) if raw else None


def resolve_options(args: argparse.Namespace, env: dict[str, str]) -> Options:
    """Flags over environment; raises UsageError with a message for anything missing or wrong."""
    url = args.url or env.get("CASCADE_URL")
    sim_id = args.sim_id or env.get("CASCADE_SIM_ID")
    missing = [flag for flag, value in (("--url/CASCADE_URL", url), ("--sim-id/CASCADE_SIM_ID", sim_id)) if not value]
    if missing:
        raise UsageError("missing " + " and ".join(missing))
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"the URL must start with http:// or https://, not {url!r}")
    speed = args.speed if args.speed is not None else _env_float(env, "CASCADE_REPLAY_SPEED", 1.0)
    if speed <= 0:
        raise UsageError("--speed must be positive")
    return Options(
        url=url,
        token=args.token or env.get("CASCADE_TOKEN") or None,
        sim_id=sim_id,
        gpu_config=args.gpu_config or env.get("CASCADE_GPU_CONFIG") or None,
        trace_dir=_path(args.trace_dir, env, "CASCADE_TRACE_DIR"),
        trace_id=args.trace_id or env.get("CASCADE_TRACE_ID") or None,
        accelsim_dir=_path(args.accelsim_dir, env, "CASCADE_ACCELSIM_DIR"),
        samples_dir=_path(args.samples_dir, env, "CASCADE_SAMPLES_DIR") or DEFAULT_SAMPLES_DIR,
        replay=args.replay,
        wall_seconds=args.wall_seconds,
        speed=speed,
        scratch_parent=_path(args.scratch_dir, env, "CASCADE_SCRATCH_DIR"),
        keep_scratch=args.keep_scratch,
        heartbeat_interval=_env_float(env, "CASCADE_HEARTBEAT_INTERVAL_S", 5.0),
        kill_grace=_env_float(env, "CASCADE_KILL_GRACE_S", 10.0),
        give_up_after=_env_float(env, "CASCADE_GIVE_UP_S", 6 * 3600.0),
    )


def simulator_argv(options: Options, run_dir: Path) -> list[str]:
    """Real Accel-Sim when installed (and no --replay), else the stand-in. Raises SetupError or
    RecordingError with the reason the sim fails with."""
    if options.replay is None and accelsim.is_installed(options.accelsim_dir):
        if not options.gpu_config:
            raise accelsim.SetupError("no GPU config (set CASCADE_GPU_CONFIG or --gpu-config)")
        assert options.accelsim_dir is not None
        return accelsim.prepare(options.accelsim_dir, options.gpu_config, options.trace_dir, run_dir)
    if options.replay is not None:
        recording = replay.recording_from_path(options.replay, options.wall_seconds)
    else:
        recording = replay.find_recording(options.samples_dir, options.gpu_config)
    log.info("stand-in mode: replaying %s (recorded on %s), speed x%g; its numbers are the "
             "recording's, not this trace's", recording.path, recording.config or "an unknown config",
             options.speed)
    argv = [sys.executable, "-m", "cascade_worker.replay", str(recording.path.resolve()),
            "--speed", repr(options.speed)]
    if recording.wall_seconds is not None:
        argv += ["--wall-seconds", repr(recording.wall_seconds)]
    return argv


async def run(options: Options) -> int:
    scratch = make_scratch(options.sim_id, options.scratch_parent)
    plan = WorkerPlan(
        sim_id=options.sim_id, argv=[], run_dir=scratch / "run", scratch=scratch,
        heartbeat_interval=options.heartbeat_interval, kill_grace=options.kill_grace,
        give_up_after=options.give_up_after, keep_scratch=options.keep_scratch,
    )
    async with SimClient(options.url, options.token, options.sim_id,
                         give_up_after=options.give_up_after) as client:
        worker = Worker(plan, client)
        async with contextlib.AsyncExitStack() as stack:
            try:
                if needs_fetch(options):
                    assert options.trace_id is not None
                    local = await stack.enter_async_context(NodeTrace(
                        options.url, options.token, options.trace_id, cache_root(options.scratch_parent)))
                    options = dataclasses.replace(options, trace_dir=local)
                plan.argv = simulator_argv(options, plan.run_dir)
            except (accelsim.SetupError, replay.RecordingError, FetchError) as exc:
                code = await worker.report_setup_failure(str(exc))
                if not options.keep_scratch:
                    shutil.rmtree(scratch, ignore_errors=True)
                return code
            return await worker.run()
    raise AssertionError("unreachable")


def needs_fetch(options: Options) -> bool:
    """Real Accel-Sim reads the trace; a node without the server's filesystem fetches it."""
    simulating = options.replay is None and accelsim.is_installed(options.accelsim_dir)
    return simulating and options.trace_id is not None and not has_trace(options.trace_dir)


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="cascade worker: %(message)s", stream=sys.stderr)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        options = resolve_options(args, dict(os.environ))
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        print(f"cascade worker: error: {exc}", file=sys.stderr)
        return EXIT_SETUP
    return asyncio.run(run(options))
