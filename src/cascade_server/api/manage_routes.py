"""Managing what exists: delete a finished run or an unused trace, re-run a run, retry its failed
sims. Not in the spec's route table; built in its style (RunDetail bodies, `detail` errors)."""

from __future__ import annotations

import asyncio

from aiohttp import web

from ..appkeys import RUNS_KEY, SETTINGS_KEY, STORE_KEY
from ..domain_errors import Conflict
from ..traces.deletion import (
    BUCKET_DELETE_WAIT_S,
    BucketDeleteError,
    endpoint_failing,
    endpoint_timed_out,
    finish_trace_delete,
)
from ..traces.ingest import TRACE_SCANNER_KEY
from .bodies import ok
from .errors import ApiError

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
    """Checked and reserved first (journaled: no run can start on it from then on, so a 409 has
    changed nothing, and a crash leaves a delete the server finishes on restart), then the
    bucket's objects go (while the scanner still knows the trace, so no scan can register it
    again half-deleted), then the row, then the mirror."""
    store, settings = request.app[STORE_KEY], request.app[SETTINGS_KEY]
    trace_id = request.match_info["trace_id"]
    trace = await store.traces.require_trace(trace_id)
    if trace.state in BUSY_TRACE_STATES:
        raise Conflict(
            f"trace {trace_id} is {trace.state}: delete it once it is ready or failed "
            f"(an upload that makes no progress fails after {settings.trace_upload_timeout_s:g} s)"
        )
    scanner = request.app.get(TRACE_SCANNER_KEY)
    if not trace.sample and (failing := endpoint_failing(scanner, trace_id)):
        raise ApiError(503, failing)
    await store.traces.reserve_trace_delete(trace_id)
    try:
        await asyncio.wait_for(
            finish_trace_delete(store, settings, scanner, trace_id, in_bucket=not trace.sample),
            BUCKET_DELETE_WAIT_S,
        )
    except TimeoutError:  # journaled: a scan finishes it once the endpoint answers
        raise ApiError(503, endpoint_timed_out(trace_id)) from None
    except BucketDeleteError as exc:  # the endpoint is down or refused: the trace stays, usable again
        await store.traces.release_trace_delete(trace_id)
        raise ApiError(502, f"could not delete trace {trace_id} from the S3 bucket: {exc}") from None
    finally:  # whatever else stopped it (the disk, a cancelled request) is finished by the scan
        store.traces.deletes_under_way.discard(trace_id)
    return web.Response(status=204)
