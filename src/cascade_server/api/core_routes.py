"""Health, traces, GPU configs and runs."""

from __future__ import annotations

from aiohttp import web

from cascade_core.models import RunCreate, RunListQuery, TraceListQuery

from ..appkeys import GPU_CONFIGS_KEY, RUNS_KEY, SETTINGS_KEY, STORE_KEY
from ..traces.ingest import TRACE_SCANNER_KEY
from .bodies import ok, read_model, read_query

routes = web.RouteTableDef()


@routes.get("/api/health")
async def health(request: web.Request) -> web.Response:
    settings = request.app[SETTINGS_KEY]
    scanner = request.app.get(TRACE_SCANNER_KEY)  # absent when no S3 endpoint is configured
    return web.json_response(
        {
            "ok": True,
            "auth": not settings.no_auth,
            "workspace": settings.workspace,
            "s3_endpoint": scanner.s3.endpoint if scanner else settings.s3_endpoint,
            # Why the endpoint is not answering (unreachable, refused, silent), null once a scan
            # works: what the scanner sees, not a check made here, so health stays a liveness answer.
            "s3_error": scanner.health_error() if scanner else None,
        }
    )


@routes.get("/api/launcher")
async def launcher_status(request: web.Request) -> web.Response:
    """Where new sims go and how busy that is now (an addition to the spec, behind the token:
    queue sizes are not for anyone who can reach the port)."""
    runs = request.app[RUNS_KEY]
    return ok(runs.launcher.status().model_copy(update={"simulator": runs.simulator.info()}))


@routes.get("/api/traces")
async def list_traces(request: web.Request) -> web.Response:
    query = read_query(request, TraceListQuery)
    return ok(await request.app[STORE_KEY].traces.list_traces(query.state, query.limit))


@routes.get("/api/traces/{trace_id}")
async def get_trace(request: web.Request) -> web.Response:
    return ok(await request.app[STORE_KEY].traces.require_trace(request.match_info["trace_id"]))


@routes.get("/api/gpu-configs")
async def list_gpu_configs(request: web.Request) -> web.Response:
    request.app[RUNS_KEY].simulator.refresh()  # an install since the last look brings its configs
    return ok(list(request.app[GPU_CONFIGS_KEY].values()))


@routes.post("/api/runs")
async def create_run(request: web.Request) -> web.Response:
    body = await read_model(request, RunCreate)
    return ok(await request.app[RUNS_KEY].create(body), status=201)


@routes.get("/api/runs")
async def list_runs(request: web.Request) -> web.Response:
    query = read_query(request, RunListQuery)
    return ok(await request.app[STORE_KEY].runs.list_runs(query.state, query.limit))


@routes.get("/api/runs/{run_id}")
async def get_run(request: web.Request) -> web.Response:
    return ok(await request.app[STORE_KEY].runs.require_run(request.match_info["run_id"]))


@routes.post("/api/runs/{run_id}/cancel")
async def cancel_run(request: web.Request) -> web.Response:
    return ok(await request.app[RUNS_KEY].cancel(request.match_info["run_id"]))
