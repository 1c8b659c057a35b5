"""`cascade serve`: the API server, with a generated token and (by default) an embedded S3."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path

from aiohttp import web

from .app import create_app
from .appkeys import SETTINGS_KEY
from .runner import ApiRunner
from .settings import Settings
from .traces.embedded_s3 import EmbeddedS3Error, embedded_s3, upload_demo_traces
from .traces.s3 import resolve_s3_info

log = logging.getLogger(__name__)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="cascade serve",
        description="Run the Cascade API server. Every option also reads a CASCADE_* variable "
        "(CASCADE_HOST, CASCADE_PORT, CASCADE_DATA_DIR, CASCADE_TOKEN, CASCADE_LAUNCHER, ...).",
    )
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default 8000)")
    parser.add_argument("--data-dir", type=Path, help="where the database, files and traces live")
    parser.add_argument("--web", action="store_true", default=None,
                        help="also serve the terminal UI in a browser at / (CASCADE_WEB=1)")
    return parser.parse_args(argv)


def build_settings(args: argparse.Namespace) -> Settings:
    overrides = {k: v for k, v in {"host": args.host, "port": args.port, "data_dir": args.data_dir, "web": args.web}.items() if v is not None}
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
    await runner.setup()
    try:
        site = web.TCPSite(runner, settings.host, settings.port)
        try:
            await site.start()
        except OSError as exc:
            raise SystemExit(f"cascade serve: cannot listen on {settings.host}:{settings.port}: {exc.strerror}")
        print(f"app: {settings.base_url}", flush=True)
        print("token: (none: CASCADE_NO_AUTH=1)" if settings.no_auth else f"token: {settings.token}", flush=True)
        print(f"data: {settings.data_dir}", flush=True)
        if settings.web:
            print(f"web: {settings.base_url}/ (the terminal UI in a browser)", flush=True)
        for line in s3_lines:
            print(line, flush=True)
        await stop.wait()
    finally:
        await runner.cleanup()


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr)
    try:
        settings = build_settings(args)
    except ValueError as exc:
        print(f"cascade serve: invalid settings: {exc}", file=sys.stderr)
        return 2
    asyncio.run(serve(settings))
    return 0
