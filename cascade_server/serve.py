"""`cascade serve`: the API server, with a generated token and (by default) an embedded S3."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path

from aiohttp import web

from .app import create_app
from .settings import Settings, load_or_create_token


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="cascade serve",
        description="Run the Cascade API server. Every option also reads a CASCADE_* variable "
        "(CASCADE_HOST, CASCADE_PORT, CASCADE_DATA_DIR, CASCADE_TOKEN, CASCADE_LAUNCHER, ...).",
    )
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default 8000)")
    parser.add_argument("--data-dir", type=Path, help="where the database, files and traces live")
    return parser.parse_args(argv)


def build_settings(args: argparse.Namespace) -> Settings:
    overrides = {k: v for k, v in {"host": args.host, "port": args.port, "data_dir": args.data_dir}.items() if v is not None}
    settings = Settings(**overrides)
    if not settings.no_auth and not settings.token:
        settings = settings.model_copy(update={"token": load_or_create_token(settings.data_dir)})
    return settings


async def serve(settings: Settings) -> None:
    app = create_app(settings)
    # handler_cancellation: a departed SSE client's handler is cancelled at once, not left
    # waiting on its queue (reference/infra.md, section 3).
    # shutdown_timeout: event streams never end by themselves; don't wait a minute for them.
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None, shutdown_timeout=2)
    await runner.setup()
    site = web.TCPSite(runner, settings.host, settings.port)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise SystemExit(f"cascade serve: cannot listen on {settings.host}:{settings.port}: {exc.strerror}")
    print(f"app: {settings.base_url}", flush=True)
    print("token: (none: CASCADE_NO_AUTH=1)" if settings.no_auth else f"token: {settings.token}", flush=True)
    print(f"data: {settings.data_dir}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
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
