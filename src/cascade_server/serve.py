"""`cascade serve`: the API server, with a generated token and (by default) an embedded S3."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path

from aiohttp import web
from pydantic import ValidationError

from cascade_core.cli_usage import OneLineErrorParser
from cascade_core.s3_endpoint import resolve_s3_info

from .api.http_site import ApiRunner
from .app import create_app
from .appkeys import SETTINGS_KEY
from .datadir import PRIVATE_UMASK
from .dbfile import corrupt_database_message, database_problem
from .faults import is_corrupt_database
from .settings import Settings, TokenError, settings_problem, stored_token, token_hint
from .storage.schema import DatabaseUnusable
from .traces.embedded_s3 import EmbeddedS3Error, embedded_s3, upload_demo_traces

log = logging.getLogger(__name__)


SETTINGS_HELP = """\
where sims run (CASCADE_LAUNCHER):
  local    worker subprocesses on this host, CASCADE_LOCAL_SLOTS at a time (the default)
  manual   every sim waits for a `cascade worker` you start yourself
  slurm    every sim is a Slurm job (one sbatch job array per run entry)

slurm launcher settings (environment):
  CASCADE_PUBLIC_URL        the URL compute nodes reach this server at (required: a loopback
                            URL is refused unless CASCADE_SLURM_LOCAL=1)
  CASCADE_SLURM_LOCAL       1 = the cluster is this host, so a loopback URL is fine
  CASCADE_SLURM_PARTITION   sbatch --partition (default: the cluster's default partition)
  CASCADE_SLURM_ACCOUNT     sbatch --account
  CASCADE_SLURM_TIME        sbatch --time per sim, e.g. 4:00:00 (default: the partition's)
  CASCADE_SLURM_ARGS        more sbatch arguments, shell-quoted, e.g. "--mem=8G --qos=long"
  CASCADE_SLURM_OUTPUT_DIR  absolute directory for the jobs' stdout/stderr and exit-status
                            files, on the nodes too (default DATA_DIR/slurm)
  CASCADE_SLURM_POLL_S      seconds between squeue calls, one for all jobs (default 5, min 1)
  CASCADE_WORKER_COMMAND    what a job runs (default: this install's `cascade worker`), e.g.
                            "/opt/cascade/bin/cascade worker" when nodes have their own install
"""


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = OneLineErrorParser(
        prog="cascade serve",
        description="Run the Cascade API server. Every option also reads a CASCADE_* variable "
        "(CASCADE_HOST, CASCADE_PORT, CASCADE_DATA_DIR, CASCADE_TOKEN, CASCADE_LAUNCHER, ...).",
        epilog=SETTINGS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default 8000)")
    parser.add_argument("--data-dir", type=Path, help="where the database, files and traces live")
    parser.add_argument(
        "--web",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="serve the terminal UI in a browser at / behind the token (the default; "
        "--no-web or CASCADE_WEB=0 turns it off)",
    )
    return parser.parse_args(argv)


def build_settings(args: argparse.Namespace) -> Settings:
    overrides = {
        k: v
        for k, v in {"host": args.host, "port": args.port, "data_dir": args.data_dir, "web": args.web}.items()
        if v is not None
    }
    return Settings(**overrides)


async def serve(settings: Settings) -> None:
    # Signals first: a stop that arrives as soon as the startup lines are out still shuts down
    # cleanly (the database's threads must be closed, or the process cannot exit).
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with contextlib.AsyncExitStack() as stack:
        s3_lines = await start_s3(settings, stack)
        await serve_app(settings, stop, s3_lines)


async def start_s3(settings: Settings, stack: contextlib.AsyncExitStack) -> list[str]:
    """The embedded S3 endpoint unless CASCADE_S3_ENDPOINT names one; its startup lines."""
    if settings.s3_endpoint:
        info = resolve_s3_info(settings)
        return info.startup_lines() if info else []
    try:
        info = await stack.enter_async_context(embedded_s3(settings))
    except EmbeddedS3Error as exc:
        raise SystemExit(f"cascade serve: {exc}") from None
    try:
        uploaded = await upload_demo_traces(info, settings)
        if uploaded:
            log.info("uploaded the demo traces %s", ", ".join(uploaded))
    except Exception as exc:  # demo data is a nicety: never a reason not to serve
        log.warning("could not upload the demo traces: %s", exc)
    return info.startup_lines()


async def serve_app(settings: Settings, stop: asyncio.Event, s3_lines: list[str]) -> None:
    app = create_app(settings)
    settings = app[SETTINGS_KEY]  # with the token create_app loaded (or generated)
    # handler_cancellation: a departed SSE client's handler is cancelled at once, not left
    # waiting on its queue (reference/infra.md, section 3). shutdown_timeout: event streams
    # never end by themselves; don't wait a minute for them.
    runner = ApiRunner(app, handler_cancellation=True, access_log=None, shutdown_timeout=2)
    try:
        await runner.setup()
    except DatabaseUnusable as exc:  # a schema this Cascade cannot serve
        raise SystemExit(f"cascade serve: {exc}") from None
    except Exception as exc:
        if not is_corrupt_database(exc):  # damage deeper than the header checked in main()
            raise
        message = corrupt_database_message(settings.db_path, f"is damaged ({exc})")
        raise SystemExit(f"cascade serve: {message}") from None
    try:
        site = web.TCPSite(runner, settings.host, settings.port)
        try:
            await site.start()
        except OSError as exc:
            raise SystemExit(
                f"cascade serve: cannot listen on {settings.host}:{settings.port}: {exc.strerror}"
            )
        print(f"app: {settings.base_url}", flush=True)
        print(
            "token: (none: CASCADE_NO_AUTH=1)" if settings.no_auth else f"token: {settings.token}", flush=True
        )
        print(f"data: {settings.data_dir}", flush=True)
        if settings.web:
            # The browser's page asks for the token: say where it is, as the page does.
            print(
                f"web: {settings.base_url}/ (the UI in a browser; its token: {token_hint(settings)})",
                flush=True,
            )
        for line in s3_lines:
            print(line, flush=True)
        await stop.wait()
    finally:
        await runner.cleanup()


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    # Everything the server and its children (SQLite, rclone, the post-processor, workers)
    # create is its user's alone: results, logs and credentials live in the data directory.
    os.umask(PRIVATE_UMASK)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    try:
        settings = build_settings(args)
    except ValidationError as exc:  # before anything starts: no rclone, no database yet
        print(f"cascade serve: invalid settings: {settings_problem(exc)}", file=sys.stderr)
        return 2
    try:
        if not settings.no_auth and not settings.token:
            stored_token(settings.data_dir)
    except (TokenError, OSError) as exc:
        print(f"cascade serve: {exc}", file=sys.stderr)
        return 2
    problem = settings.launcher_problem()
    if problem:
        print(f"cascade serve: {problem}", file=sys.stderr)
        return 2
    if problem := database_problem(settings.db_path):
        print(f"cascade serve: {corrupt_database_message(settings.db_path, problem)}", file=sys.stderr)
        return 1
    asyncio.run(serve(settings))
    return 0
