"""Managing what exists: delete a finished run or an unused trace, re-run a run, retry its failed
sims. Not in the spec's route table; built in its style (RunDetail bodies, `detail` errors)."""

from __future__ import annotations

import asyncio
import shutil

from aiohttp import web

from .appkeys import RUNS_KEY, SETTINGS_KEY, STORE_KEY
from .http import ApiError, ok
from .settings import Settings
from .storage import Conflict, NotFound
from .traces.completeness import trace_id_problem
from .traces.ingest import TRACE_SCANNER_KEY

routes = web.RouteTableDef()

# A trace still arriving or being post-processed has files in flight: deleting it would race them.
BUSY_TRACE_STATES = ("uploading", "processing")


@routes.delete("/api/runs/{run_id}")
async def delete_run(request: web.Request) -> web.Response:
    await request.app[RUNS_KEY].delete(request.match_info["run_id"])
    return web.Response(status=204)


@routes.post("/api/runs/{run_id}/rerun")
async def rerun(request: web.Request) -> web.Response:
    return ok(await request.app[RUNS_KEY].rerun(request.match_info["run_id"]), status=201)


@routes.post("/api/runs/{run_id}/retry")
async def retry(request: web.Request) -> web.Response:
    return ok(await request.app[RUNS_KEY].retry(request.match_info["run_id"]), status=201)


@routes.delete("/api/traces/{trace_id}")
async def delete_trace(request: web.Request) -> web.Response:
    """Checked and reserved first (no run can start on it from then on, so a 409 has changed
    nothing), then the bucket's objects go (while the scanner still knows the trace, so no scan
    can register it again half-deleted), then the row, then the mirror."""
    store, settings = request.app[STORE_KEY], request.app[SETTINGS_KEY]
    trace_id = request.match_info["trace_id"]
    trace = await store.get_trace(trace_id)
    if trace is None:
        raise NotFound(f"trace {trace_id} not found")
    if trace.state in BUSY_TRACE_STATES:
        raise Conflict(f"trace {trace_id} is {trace.state}: delete it once it is ready or failed")
    await store.reserve_trace_delete(trace_id)
    scanner = request.app.get(TRACE_SCANNER_KEY)
    try:
        if scanner is not None and not trace.sample:
            try:
                await scanner.delete_objects(trace_id)
            except Exception as exc:  # the endpoint is down or refused: nothing was changed here
                message = f"{type(exc).__name__}: {exc}".splitlines()[0]
                raise ApiError(502, f"could not delete trace {trace_id} from the S3 bucket: {message}") from None
        await store.delete_trace(trace_id)
    finally:
        store.release_trace_delete(trace_id)  # a delete that did not finish leaves the trace usable
    if scanner is not None:
        scanner.forget(trace_id)
    await asyncio.to_thread(_remove_trace_files, settings, trace_id)
    return web.Response(status=204)


def _remove_trace_files(settings: Settings, trace_id: str) -> None:
    if trace_id_problem(trace_id):  # a trace refused for its id (say `..`) never had a mirror
        return
    shutil.rmtree(settings.traces_dir / trace_id, ignore_errors=True)
    (settings.trace_books_dir / f"{trace_id}.json").unlink(missing_ok=True)
