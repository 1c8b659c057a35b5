"""Config variants and accuracy: the options a GPU config takes, and `GET /api/accuracy`."""

from __future__ import annotations

from aiohttp import web

from cascade_core.models import AccuracyQuery

from ..appkeys import RUNS_KEY, SETTINGS_KEY, STORE_KEY
from ..services.accuracy_report import accuracy_rows
from .bodies import ok, read_query

routes = web.RouteTableDef()


@routes.get("/api/gpu-configs/{name}/options")
async def gpu_config_options(request: web.Request) -> web.Response:
    return ok(await request.app[RUNS_KEY].config_options(request.match_info["name"]))


@routes.get("/api/accuracy")
async def accuracy(request: web.Request) -> web.Response:
    query = read_query(request, AccuracyQuery)
    return ok(
        await accuracy_rows(
            request.app[STORE_KEY],
            request.app[SETTINGS_KEY].traces_dir,
            trace=query.trace,
            config=query.config,
            points=query.points,
        )
    )
