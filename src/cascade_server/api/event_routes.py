"""GET /api/runs/{run_id}/events: the run's live server-sent events (spec 000).

Hand-written on StreamResponse rather than aiohttp-sse: the spec's wire format wants a
`: keepalive` comment (aiohttp-sse writes `: ping`), and draining every queued event into one
write per wake-up is the big throughput lever (reference/infra.md, section 3).
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from ..appkeys import BROKER_KEY, SETTINGS_KEY, STORE_KEY
from ..events import sse_frame

routes = web.RouteTableDef()
KEEPALIVE = b": keepalive\n\n"
SEND_SLICE = 256 * 1024


@routes.get("/api/runs/{run_id}/events", name="run-events")
async def run_events(request: web.Request) -> web.StreamResponse:
    store, broker, settings = request.app[STORE_KEY], request.app[BROKER_KEY], request.app[SETTINGS_KEY]
    run_id = request.match_info["run_id"]
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
        }
    )
    if request.method == "HEAD":  # headers only (the run must exist): a stream would never end
        await store.runs.require_run(run_id)
        await response.prepare(request)
        await response.write_eof()
        return response
    # Snapshot and subscription under the writer lock: no event is in both, none is missed.
    async with store.db.lock:
        snapshot = await store.outputs.snapshot(run_id)
        subscriber = broker.subscribe(
            run_id, on_overflow=lambda: _disconnect(request), max_bytes=settings.sse_max_buffer_bytes
        )
    try:
        await response.prepare(request)
        await _send(request, response, sse_frame(snapshot), settings.sse_send_timeout_s)
        while True:
            try:
                async with asyncio.timeout(settings.keepalive_s):
                    await subscriber.wakeup.wait()
            except TimeoutError:
                await _send(request, response, KEEPALIVE, settings.sse_send_timeout_s)
                continue
            if subscriber.overflowed:
                break  # more than the limit behind: end the stream; the client reconnects
            await _send(request, response, b"".join(subscriber.drain()), settings.sse_send_timeout_s)
            if subscriber.ended:
                break  # the run was deleted: end the stream (a reconnect gets a 404)
        return response
    finally:
        broker.unsubscribe(run_id, subscriber)


async def _send(request: web.Request, response: web.StreamResponse, data: bytes, timeout_s: float) -> None:
    """Write `data`, dropping a client that stopped reading (the kernel's send buffer full) like
    one that overflowed. The limit is per SEND_SLICE, not for the whole write: a big snapshot
    to a slow but reading client (a terminal over SSH) must not be cut off and loop reconnecting."""
    view = memoryview(data)
    try:
        for start in range(0, len(view), SEND_SLICE):
            async with asyncio.timeout(timeout_s):
                await response.write(view[start : start + SEND_SLICE])
    except TimeoutError:
        _disconnect(request)
        raise ConnectionResetError(f"event stream client read nothing for {timeout_s:g} s") from None


def _disconnect(request: web.Request) -> None:
    # abort, not close: close() waits to flush what is buffered, to a client that does not read.
    if request.transport is not None:
        request.transport.abort()
