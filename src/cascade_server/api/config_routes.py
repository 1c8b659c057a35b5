"""GPU configs of your own: add one, remove one, and a config's files for a worker that cannot
see them (not in the spec's route table; built in its style: `GpuConfig` bodies, `detail` errors)."""

from __future__ import annotations

from aiohttp import web

from cascade_core.models import GpuConfigAdd

from ..appkeys import CONFIGS_KEY
from .bodies import ok, read_model

routes = web.RouteTableDef()


@routes.post("/api/gpu-configs")
async def add_gpu_config(request: web.Request) -> web.Response:
    body = await read_model(request, GpuConfigAdd)
    return ok(await request.app[CONFIGS_KEY].add(body), status=201)


@routes.delete("/api/gpu-configs/{name}")
async def remove_gpu_config(request: web.Request) -> web.Response:
    await request.app[CONFIGS_KEY].remove(request.match_info["name"])
    return web.Response(status=204)


@routes.get("/api/gpu-configs/{name}/files")
async def gpu_config_files(request: web.Request) -> web.Response:
    return ok(await request.app[CONFIGS_KEY].files(request.match_info["name"]))
