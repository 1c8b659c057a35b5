"""The aiohttp application factory."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from aiohttp import web

from .api import agent_routes
from .api.middlewares import auth_middleware, errors_middleware
from .api.route_tables import API_ROUTE_TABLES
from .appkeys import (
    BROKER_KEY,
    CLOCK_KEY,
    CONFIGS_KEY,
    GPU_CONFIGS_KEY,
    INGEST_KEY,
    RUNS_KEY,
    SETTINGS_KEY,
    STORE_KEY,
)
from .clock import Clock, SystemClock
from .datadir import prepare_data_dir
from .events import Broker
from .faults import is_disk_full
from .gpu_configs import scan_gpu_configs
from .ingest.log_ingest import LogIngest
from .ingest.parse_pool import ParsePool
from .launchers.base import Launcher, LauncherEvents
from .monitor import heartbeat_monitor_ctx
from .services.config_service import ConfigService
from .services.run_service import RunService, StoreLauncherEvents
from .settings import Settings, load_or_create_token
from .storage import Store
from .traces.ingest import trace_ingest_ctx

log = logging.getLogger(__name__)

# The route tables the app is built from, in order: the API's, then the agent prompt's pages.
ROUTE_TABLES = (*API_ROUTE_TABLES, agent_routes.routes)


def make_launcher(settings: Settings, events: LauncherEvents) -> Launcher:
    if settings.launcher == "slurm":
        import shlex

        from .launchers.slurm import SlurmLauncher, SlurmOptions

        problem = settings.launcher_problem()
        if problem:
            raise ValueError(problem)
        return SlurmLauncher(
            events,
            SlurmOptions(
                worker_command=settings.worker_argv(),
                output_dir=settings.slurm_output_path,
                partition=settings.slurm_partition,
                account=settings.slurm_account,
                time_limit=settings.slurm_time,
                extra_args=shlex.split(settings.slurm_args),
                poll_s=settings.slurm_poll_s,
            ),
        )
    if settings.launcher == "manual":
        from .launchers.manual import ManualLauncher

        return ManualLauncher(events)
    from .launchers.local import LocalLauncher

    return LocalLauncher(events, slots=settings.local_slots, log_dir=settings.workers_dir)


async def store_ctx(app: web.Application) -> AsyncIterator[None]:
    """Open the database, read the GPU configs, start the launcher and hand it unfinished sims;
    the log ingest service parses in the parse pool's worker process, which ends with the app.
    Whatever was started is stopped again, also when a later step fails: the database's threads
    would keep the process from exiting."""
    settings = app[SETTINGS_KEY]
    async with contextlib.AsyncExitStack() as started:
        parse_pool = ParsePool()
        parse_pool.start()  # first: before the database's threads
        started.callback(parse_pool.close)
        store = await Store(settings.db_path, app[BROKER_KEY]).open()
        started.push_async_callback(store.close)
        app[INGEST_KEY] = ingest = LogIngest(store, parse_pool, settings.sim_log_limit_mb)
        started.callback(ingest.close)
        await ingest.watch_stored_gaps()
        configs = scan_gpu_configs(settings.configs_root)  # with the added ones: runs.simulator
        log.info("%d GPU configs under %s", len(configs), settings.configs_root)
        launcher = make_launcher(settings, StoreLauncherEvents(store))
        started.push_async_callback(launcher.close)
        app[STORE_KEY], app[GPU_CONFIGS_KEY] = store, configs
        app[RUNS_KEY] = runs = RunService(store, settings, configs, launcher)
        started.push_async_callback(runs.close)
        app[CONFIGS_KEY] = ConfigService(runs)  # configs added with `cascade configs add`
        if settings.samples:  # before resume: an interrupted seed must not reach the launcher
            from .samples import SampleError, seed_samples

            try:
                await seed_samples(store, ingest, settings)
            except SampleError as exc:
                log.warning("no sample trace: %s", exc)
            except Exception as exc:
                if not is_disk_full(exc):
                    raise
                log.warning("no sample trace: the disk is full (%s)", exc)
        await runs.resume()
        yield


def create_app(settings: Settings, clock: Clock | None = None) -> web.Application:
    """The app; `clock` is the heartbeat monitor's time (tests pass one they advance)."""
    prepare_data_dir(settings)
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
    app[CLOCK_KEY] = clock or SystemClock()
    app[BROKER_KEY] = Broker()
    app.cleanup_ctx.append(store_ctx)
    app.cleanup_ctx.append(heartbeat_monitor_ctx)
    app.cleanup_ctx.append(trace_ingest_ctx)  # after store_ctx: scans the S3 bucket into the store
    for table in ROUTE_TABLES:
        app.add_routes(table)
    if settings.web:  # textual-serve is imported only when the web UI is on
        from .web_ui import add_web_ui

        add_web_ui(app)
    return app
