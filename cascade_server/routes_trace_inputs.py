"""A ready trace's simulator inputs over the API, for compute nodes without the server's
filesystem: the list (`GET /api/traces/{id}/inputs`) and each file (`.../inputs/{path}`)."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from .appkeys import SETTINGS_KEY, STORE_KEY
from .http import ApiError
from .storage import NotFound
from .trace_inputs import KERNELSLIST, kernel_files

routes = web.RouteTableDef()


async def _inputs(request: web.Request) -> tuple[Path, list[str]]:
    trace_id = request.match_info["trace_id"]
    trace = await request.app[STORE_KEY].get_trace(trace_id)
    if trace is None:
        raise NotFound(f"trace {trace_id} not found")
    if trace.sample:
        raise ApiError(409, f"trace {trace_id} is a sample, which has no instruction traces to simulate")
    if trace.state != "ready":
        raise ApiError(409, f"trace {trace_id} is {trace.state}, not ready")
    root = request.app[SETTINGS_KEY].traces_dir / trace_id
    try:
        listing = (root / KERNELSLIST).read_text()
    except OSError:
        raise ApiError(409, f"trace {trace_id} has no {KERNELSLIST} on the server") from None
    return root, [KERNELSLIST, *kernel_files(listing)]


@routes.get("/api/traces/{trace_id}/inputs")
async def list_inputs(request: web.Request) -> web.Response:
    root, paths = await _inputs(request)
    files = []
    for path in paths:
        try:
            files.append({"path": path, "size": (root / path).stat().st_size})
        except OSError:
            raise ApiError(409, f"trace {request.match_info['trace_id']} lacks {path} on the server") from None
    return web.json_response({"trace_id": request.match_info["trace_id"], "files": files})


@routes.get("/api/traces/{trace_id}/inputs/{path:.+}")
async def get_input(request: web.Request) -> web.StreamResponse:
    root, paths = await _inputs(request)
    path = request.match_info["path"]
    if path not in paths:  # only the listed files: no path leads out of the trace
        raise NotFound(f"trace {request.match_info['trace_id']} has no simulator input {path!r}")
    return web.FileResponse(root / path, headers={"Content-Type": "application/octet-stream"})
