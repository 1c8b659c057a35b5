"""The simulator endpoints (spec 002): heartbeat, log chunks, step timing, output files."""

from __future__ import annotations

import os
import shutil

from aiohttp import web

from cascade_core.models import TERMINAL_SIM_STATES, Heartbeat, LogChunk, StepTimelineUpload

from ..appkeys import INGEST_KEY, SETTINGS_KEY, STORE_KEY
from ..content_types import content_type_for
from ..datadir import private_dir, private_file
from ..domain_errors import NotFound
from ..partial_files import partial_path
from .bodies import body_blocks, check_file_name, ok, read_model
from .errors import ApiError

routes = web.RouteTableDef()

MIB = 1024 * 1024
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


@routes.post("/api/sims/{sim_id}/heartbeat")
async def heartbeat(request: web.Request) -> web.Response:
    beat = await read_model(request, Heartbeat)
    sim_id = request.match_info["sim_id"]
    if beat.state in TERMINAL_SIM_STATES and (words := request.app[INGEST_KEY].limits.words(sim_id)):
        # the server left lines out of its log: its error says so, as the worker's would
        beat = beat.model_copy(update={"error": f"{beat.error}; {words}" if beat.error else words})
    ack = await request.app[STORE_KEY].sim_states.heartbeat(sim_id, beat)
    if beat.state in TERMINAL_SIM_STATES:  # its last chunks are in: a gap left now never fills
        await request.app[INGEST_KEY].close_gaps(sim_id)
    return ok(ack)


@routes.post("/api/sims/{sim_id}/logs")
async def append_log(request: web.Request) -> web.Response:
    chunk = await read_model(request, LogChunk)
    await request.app[INGEST_KEY].append_log(request.match_info["sim_id"], chunk.seq, chunk.lines)
    return web.Response(status=204)


@routes.post("/api/sims/{sim_id}/step-timeline")
async def put_step_timeline(request: web.Request) -> web.Response:
    store = request.app[STORE_KEY]
    sim = await store.runs.require_sim(request.match_info["sim_id"])
    upload = await read_model(request, StepTimelineUpload)
    await store.outputs.put_step_timeline(sim.id, upload)
    return web.Response(status=204)


@routes.put("/api/sims/{sim_id}/files/{name}")
async def put_file(request: web.Request) -> web.Response:
    """Stream the body to a temp file, enforcing the per-file and per-sim limits as bytes arrive,
    record it, then rename it into place: a reader never sees half a file."""
    settings, store = request.app[SETTINGS_KEY], request.app[STORE_KEY]
    name = request.match_info["name"]
    check_file_name(name)
    sim = await store.runs.require_sim(request.match_info["sim_id"])
    if request.content_type in FORM_TYPES:
        raise ApiError(415, "send the file's raw bytes as application/octet-stream, not a form")
    others = sum(f.size for f in await store.outputs.sim_files(sim.id) if f.name != name)
    room = settings.max_sim_files_bytes - others

    def too_big(size: int) -> ApiError | None:
        if size > settings.max_file_bytes:
            return ApiError(413, f"file is over the {settings.max_file_bytes // MIB} MiB per-file limit")
        if size > room:
            return ApiError(
                413, f"the sim's files would pass {settings.max_sim_files_bytes // MIB} MiB in all"
            )
        return None

    if request.content_length is not None and (error := too_big(request.content_length)):
        raise error
    sim_dir = settings.files_dir / sim.id
    private_dir(sim_dir)
    partial = partial_path(sim_dir, name)  # a name no accepted file name can take
    size = 0
    try:
        with os.fdopen(private_file(partial, os.O_WRONLY | os.O_TRUNC), "wb") as out:
            async for block in body_blocks(request):
                size += len(block)
                if error := too_big(size):
                    raise error
                out.write(block)
        # Recorded first, then renamed into place: a write the database refuses (507 on a full
        # disk) leaves the stored file as it was. (A crash between the two leaves the old bytes
        # under the new size until the worker's retry of the unanswered PUT.)
        recorded = await store.outputs.put_file(sim.id, name, size, content_type_for(name))
        os.replace(partial, sim_dir / name)
        return ok(recorded)
    except (FileNotFoundError, NotFound):
        # The run was deleted while the body arrived (its delete removed the sim's directory, or
        # its rows before ours were written): nothing of this upload may stay behind.
        if await store.runs.get_sim(sim.id) is not None:
            raise
        shutil.rmtree(sim_dir, ignore_errors=True)
        raise NotFound(f"sim {sim.id} not found") from None
    finally:
        partial.unlink(missing_ok=True)
