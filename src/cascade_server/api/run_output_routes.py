"""What a run produced: logs, kernels, comparison, downloads, Perfetto, step timing, files."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import BinaryIO

from aiohttp import web

from cascade_core.comparison import trace_kernel_names
from cascade_core.demangle import demangle
from cascade_core.models import GpuConfig, RunDetail, SimResults
from cascade_core.sampling import sampled_totals
from cascade_core.shard_merge import mark_warmup, owned

from ..appkeys import GPU_CONFIGS_KEY, SETTINGS_KEY, STORE_KEY
from ..content_types import content_type_for
from ..domain_errors import NotFound
from ..services.run_comparison import comparison_json, perfetto_trace
from ..services.step_timelines import run_step_timelines as merged_step_timelines
from . import strict_json
from .bodies import check_file_name, ok, stream_body
from .errors import JSON_TYPE

routes = web.RouteTableDef()


def attachment(filename: str) -> dict[str, str]:
    return {"Content-Disposition": f'attachment; filename="{filename}"'}


async def _comparison(request: web.Request, run: RunDetail) -> bytes:
    """The run's Comparison as JSON, from the real timing stored with its trace (a deleted trace
    has none, even if a trace of the same id was uploaded since), built in a thread."""
    store = request.app[STORE_KEY]
    kernels = await store.outputs.run_kernels(run.id)
    trace = await store.traces.live_trace_of_run(run.id)
    real = await store.traces.real_timing(trace.id) if trace is not None and trace.has_real_timing else []
    # A position no sim has finished yet (a shard behind the ones after it) has the trace's name.
    names = trace_kernel_names(trace.kernels) if trace is not None else ()
    return await asyncio.to_thread(comparison_json, run, kernels, real, names)


def _config(request: web.Request, name: str) -> GpuConfig:
    known = request.app[GPU_CONFIGS_KEY].get(name)
    return known or GpuConfig(name=name, arch="unknown", core_clock_mhz=0)


@routes.get("/api/sims/{sim_id}/log")
async def sim_log(request: web.Request) -> web.StreamResponse:
    store = request.app[STORE_KEY]
    sim = await store.runs.require_sim(request.match_info["sim_id"])
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/plain; charset=utf-8",
            **attachment(f"{sim.id}.log"),
        }
    )
    return await stream_body(request, response, store.logs.iter_log(sim.id))


@routes.get("/api/runs/{run_id}/kernels")
async def run_kernels(request: web.Request) -> web.Response:
    store = request.app[STORE_KEY]
    run = await store.runs.require_run(request.match_info["run_id"])
    return ok(await store.outputs.run_kernels(run.id))


@routes.get("/api/runs/{run_id}/comparison")
async def run_comparison(request: web.Request) -> web.Response:
    run = await request.app[STORE_KEY].runs.require_run(request.match_info["run_id"])
    return web.Response(body=await _comparison(request, run), content_type=JSON_TYPE)


@routes.get("/api/sims/{sim_id}/results")
async def sim_results(request: web.Request) -> web.Response:
    store = request.app[STORE_KEY]
    sim = await store.runs.require_sim(request.match_info["sim_id"])
    run = await store.runs.require_run(sim.run_id)
    results = SimResults(
        sim=sim,
        trace_id=run.trace_id,
        gpu_config=_config(request, sim.gpu_config),
        kernels=(kernels := mark_warmup(sim, await store.outputs.sim_kernels(sim.id))),
        totals=sampled_totals(sim, kernels),
    )
    return ok(results, headers=attachment(f"{sim.id}-results.json"))


@routes.get("/api/runs/{run_id}/results")
async def run_results(request: web.Request) -> web.StreamResponse:
    """RunResults, streamed a sim at a time: a run's full stats can be hundreds of megabytes."""
    store = request.app[STORE_KEY]
    run = await store.runs.require_run(request.match_info["run_id"])
    trace = await store.traces.live_trace_of_run(run.id)
    trace_json = trace.model_dump_json() if trace else run.trace.model_dump_json()
    # Everything but the sims' stats is small: built before the status goes out, so a failure
    # there (an unreadable real_timing.json, say) is a plain error response.
    compared = await _comparison(request, run)

    async def body() -> AsyncIterator[bytes]:
        yield (
            b'{"run":'
            + run.summary().model_dump_json().encode()
            + b',"trace":'
            + trace_json.encode()
            + b',"sims":['
        )
        for number, sim in enumerate(run.sims):
            results = SimResults(
                sim=sim,
                trace_id=run.trace_id,
                gpu_config=_config(request, sim.gpu_config),
                kernels=(kernels := owned(sim, await store.outputs.sim_kernels(sim.id))),
                totals=sampled_totals(sim, kernels),
            )
            yield (b"," if number else b"") + results.model_dump_json().encode()
        yield b'],"comparison":' + compared + b"}"

    response = web.StreamResponse(
        headers={
            "Content-Type": "application/json",
            **attachment(f"{run.id}-results.json"),
        }
    )
    return await stream_body(request, response, body())


@routes.get("/api/runs/{run_id}/perfetto")
async def run_perfetto(request: web.Request) -> web.Response:
    store = request.app[STORE_KEY]
    run = await store.runs.require_run(request.match_info["run_id"])
    timelines = await merged_step_timelines(store, request.app[SETTINGS_KEY].traces_dir, run)
    trace = perfetto_trace(run, await store.outputs.run_kernels(run.id), demangle, timelines)
    return web.Response(
        body=strict_json.dumps(trace),
        content_type="application/json",
        headers=attachment(f"{run.id}-perfetto.json"),
    )


@routes.get("/api/runs/{run_id}/step-timelines")
async def run_step_timelines(request: web.Request) -> web.Response:
    store = request.app[STORE_KEY]
    run = await store.runs.require_run(request.match_info["run_id"])
    return ok(await merged_step_timelines(store, request.app[SETTINGS_KEY].traces_dir, run))


@routes.get("/api/runs/{run_id}/files")
async def run_files(request: web.Request) -> web.Response:
    store = request.app[STORE_KEY]
    run = await store.runs.require_run(request.match_info["run_id"])
    return ok(await store.outputs.run_files(run.id))


@routes.get("/api/sims/{sim_id}/files")
async def sim_files(request: web.Request) -> web.Response:
    store = request.app[STORE_KEY]
    sim = await store.runs.require_sim(request.match_info["sim_id"])
    return ok(await store.outputs.sim_files(sim.id))


@routes.get("/api/sims/{sim_id}/files/{name}")
async def sim_file(request: web.Request) -> web.StreamResponse:
    store = request.app[STORE_KEY]
    name = request.match_info["name"]
    check_file_name(name)
    sim = await store.runs.require_sim(request.match_info["sim_id"])
    path = request.app[SETTINGS_KEY].files_dir / sim.id / name
    if name not in {f.name for f in await store.outputs.sim_files(sim.id)} or not path.is_file():
        raise NotFound(f"sim {sim.id} has no file {name}")
    # Streamed by hand, not with FileResponse: that one serves a sibling `<name>.gz` with
    # Content-Encoding when it exists, and a sim may upload both `x.txt` and `x.txt.gz`.
    # A `.gz` goes out as application/gzip with no Content-Encoding, so it stays compressed.
    with open(path, "rb") as source:
        size = os.fstat(source.fileno()).st_size
        response = web.StreamResponse(
            headers={
                "Content-Type": content_type_for(name),
                "Content-Length": str(size),
                **attachment(name),
            }
        )
        return await stream_body(request, response, _file_blocks(source))


async def _file_blocks(source: BinaryIO) -> AsyncIterator[bytes]:
    loop = asyncio.get_running_loop()
    while block := await loop.run_in_executor(None, source.read, 1 << 20):
        yield block
