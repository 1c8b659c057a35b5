"""The aiohttp application factory."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from aiohttp import web

from . import routes_agent, routes_core, routes_events, routes_manage, routes_results, routes_sim
from .appkeys import BROKER_KEY, GPU_CONFIGS_KEY, RUNS_KEY, SETTINGS_KEY, STORE_KEY
from .events import Broker
from .gpu_configs import scan_gpu_configs
from .launchers.base import Launcher, LauncherEvents
from .middlewares import auth_middleware, errors_middleware
from .runs import RunService, StoreLauncherEvents
from .settings import Settings, load_or_create_token
from .storage import Store
from .traces.ingest import trace_ingest_ctx

log = logging.getLogger(__name__)


def make_launcher(settings: Settings, events: LauncherEvents) -> Launcher:
    if settings.launcher == "manual":
        from .launchers.manual import ManualLauncher

        return ManualLauncher(events)
    from .launchers.local import LocalLauncher

    return LocalLauncher(events, slots=settings.local_slots, log_dir=settings.workers_dir)


async def store_ctx(app: web.Application) -> AsyncIterator[None]:
    """Open the database, read the GPU configs, start the launcher and hand it unfinished sims."""
    settings = app[SETTINGS_KEY]
    store = await Store(settings.db_path, app[BROKER_KEY]).open()
    configs = scan_gpu_configs(settings.configs_root)
    log.info("%d GPU configs under %s", len(configs), settings.configs_root)
    launcher = make_launcher(settings, StoreLauncherEvents(store))
    app[STORE_KEY], app[GPU_CONFIGS_KEY] = store, configs
    app[RUNS_KEY] = runs = RunService(store, settings, configs, launcher)
    if settings.samples:  # before resume: an interrupted seed must not reach the launcher
        from .samples import SampleError, seed_samples

        try:
            await seed_samples(store, settings)
        except SampleError as exc:
            log.warning("no sample trace: %s", exc)
    await runs.resume()
    try:
        yield
    finally:
        try:
            await runs.close()
            await launcher.close()
        finally:
            await store.close()  # always: its threads would keep the process from exiting


async def heartbeat_monitor_ctx(app: web.Application) -> AsyncIterator[None]:
    """Marks silent sims `lost`, then `failed` (Store.expire_heartbeats)."""
    settings, store = app[SETTINGS_KEY], app[STORE_KEY]

    async def watch() -> None:
        while True:
            await asyncio.sleep(settings.monitor_interval_s)
            try:
                await store.expire_heartbeats(settings.heartbeat_timeout_s)
            except Exception:
                log.exception("heartbeat monitor")

    task = asyncio.create_task(watch())
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def create_app(settings: Settings) -> web.Application:
    # The one place the token file is read: everything else gets the token from app[SETTINGS_KEY].
    if not settings.no_auth and not settings.token:
        settings = settings.model_copy(update={"token": load_or_create_token(settings.data_dir)})
    app = web.Application(
        client_max_size=settings.max_json_bytes,
        middlewares=[errors_middleware, auth_middleware],
        # aiohttp's keep-alive timer starts when a connection opens and again after each response,
        # and closes the connection if no whole request has arrived by then: the header timeout.
        handler_args={"keepalive_timeout": settings.header_timeout_s},
    )
    app[SETTINGS_KEY] = settings
    app[BROKER_KEY] = Broker()
    app.cleanup_ctx.append(store_ctx)
    app.cleanup_ctx.append(heartbeat_monitor_ctx)
    app.cleanup_ctx.append(trace_ingest_ctx)  # after store_ctx: scans the S3 bucket into the store
    for module in (routes_core, routes_manage, routes_sim, routes_results, routes_events, routes_agent):
        app.add_routes(module.routes)
    if settings.web:  # textual-serve is imported only when the web UI is on
        from .web_ui import add_web_ui

        add_web_ui(app)
    return app
