"""A ready trace's simulator inputs over the API, for compute nodes without the server's
filesystem: the list (`GET /api/traces/{id}/inputs`) and each file (`.../inputs/{path}`)."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict

from cascade_core.trace_inputs import KERNELSLIST, kernel_files
from cascade_core.trace_layout import CORRECTED_TIMELINE_NAME, KERNEL_MAPPING_NAME, METADATA_NAME, locate

from ..appkeys import SETTINGS_KEY, STORE_KEY
from ..domain_errors import NotFound
from ..traces.grouping import TraceFormatError
from .bodies import read_query
from .errors import ApiError

routes = web.RouteTableDef()


class NoQuery(BaseModel):
    """The list takes no query parameters: any is a 422, as on the other list routes."""

    model_config = ConfigDict(extra="forbid")


async def _inputs(request: web.Request) -> tuple[Path, list[str]]:
    trace_id = request.match_info["trace_id"]
    trace = await request.app[STORE_KEY].traces.require_trace(trace_id)
    if trace.sample:
        raise ApiError(409, f"trace {trace_id} is a sample, which has no instruction traces to simulate")
    if trace.state != "ready":
        raise ApiError(409, f"trace {trace_id} is {trace.state}, not ready")
    root = request.app[SETTINGS_KEY].traces_dir / trace_id
    try:
        listing = (root / KERNELSLIST).read_bytes().decode("utf-8", errors="replace")  # "\r" kept
    except OSError:
        raise ApiError(409, f"trace {trace_id} has no {KERNELSLIST} on the server") from None
    try:
        kernels = kernel_files(listing)
    except TraceFormatError as exc:  # a trace made ready before check_kernelslist_g refused these
        raise ApiError(409, f"trace {trace_id}'s {KERNELSLIST}: {exc}") from None
    return root, [KERNELSLIST, *kernels, *_step_timeline_files(root, trace.metadata)]


def _input_size(request: web.Request, root: Path, path: str) -> int:
    """The size of a listed input; a 409 when it is missing or not a regular file (a directory
    named like a kernel), as FileResponse would otherwise answer a bare 404 or 403."""
    try:
        info = (root / path).stat()
    except OSError:
        info = None
    if info is None or not stat.S_ISREG(info.st_mode):
        raise ApiError(409, f"trace {request.match_info['trace_id']} lacks {path} on the server")
    return info.st_size


def _step_timeline_files(root: Path, metadata: dict[str, Any] | None) -> list[str]:
    """A trace with a step timeline: its two files and metadata.json (which says where they are),
    so that a worker sends the step timeline from a node without the server's filesystem too."""
    found = [locate(root, name, metadata) for name in (CORRECTED_TIMELINE_NAME, KERNEL_MAPPING_NAME)]
    if any(path is None for path in found):
        return []
    extra = [METADATA_NAME] if (root / METADATA_NAME).is_file() else []
    return extra + [path.relative_to(root).as_posix() for path in found if path is not None]


@routes.get("/api/traces/{trace_id}/inputs")
async def list_inputs(request: web.Request) -> web.Response:
    read_query(request, NoQuery)
    root, paths = await _inputs(request)
    files = [{"path": path, "size": _input_size(request, root, path)} for path in paths]
    return web.json_response({"trace_id": request.match_info["trace_id"], "files": files})


@routes.get("/api/traces/{trace_id}/inputs/{path:.+}")
async def get_input(request: web.Request) -> web.StreamResponse:
    root, paths = await _inputs(request)
    path = request.match_info["path"]
    if path not in paths:  # only the listed files: no path leads out of the trace
        raise NotFound(f"trace {request.match_info['trace_id']} has no simulator input {path!r}")
    _input_size(request, root, path)
    return web.FileResponse(root / path, headers={"Content-Type": "application/octet-stream"})
