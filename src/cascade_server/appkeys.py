"""Typed keys for what the aiohttp application holds."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from cascade_core.models import GpuConfig

    from .clock import Clock
    from .events import Broker
    from .ingest.log_ingest import LogIngest
    from .services.config_service import ConfigService
    from .services.run_service import RunService
    from .settings import Settings
    from .storage import Store

SETTINGS_KEY: web.AppKey[Settings] = web.AppKey("settings")
STORE_KEY: web.AppKey[Store] = web.AppKey("store")
BROKER_KEY: web.AppKey[Broker] = web.AppKey("broker")
GPU_CONFIGS_KEY: web.AppKey[dict[str, GpuConfig]] = web.AppKey("gpu_configs")
RUNS_KEY: web.AppKey[RunService] = web.AppKey("runs")
CONFIGS_KEY: web.AppKey[ConfigService] = web.AppKey("configs")
CLOCK_KEY: web.AppKey[Clock] = web.AppKey("clock")
INGEST_KEY: web.AppKey[LogIngest] = web.AppKey("ingest")
