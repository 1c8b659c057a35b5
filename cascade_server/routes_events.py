"""GET /api/runs/{run_id}/events: the run's live server-sent events (spec 000).

Hand-written on StreamResponse rather than aiohttp-sse: the spec's wire format wants a
`: keepalive` comment (aiohttp-sse writes `: ping`), and draining every queued event into one
write per wake-up is the big throughput lever (reference/infra.md, section 3).
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from .appkeys import BROKER_KEY, SETTINGS_KEY, STORE_KEY
from .events import sse_frame

routes = web.RouteTableDef()
KEEPALIVE = b": keepalive\n\n"


@routes.get("/api/runs/{run_id}/events", name="run-events")
async def run_events(request: web.Request) -> web.StreamResponse:
    store, broker = request.app[STORE_KEY], request.app[BROKER_KEY]
    run_id = request.match_info["run_id"]
    keepalive_s = request.app[SETTINGS_KEY].keepalive_s
    # Snapshot and subscription under the writer lock: no event is in both, none is missed.
    async with store.lock:
        snapshot = await store.snapshot(run_id)
        subscriber = broker.subscribe(run_id, on_overflow=lambda: _disconnect(request))
    try:
        response = web.StreamResponse(headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
        })
        await response.prepare(request)
        await response.write(sse_frame(snapshot))
        while True:
            try:
                async with asyncio.timeout(keepalive_s):
                    await subscriber.wakeup.wait()
            except TimeoutError:
                await response.write(KEEPALIVE)
                continue
            if subscriber.overflowed:
                break  # more than the limit behind: end the stream; the client reconnects
            await response.write(b"".join(subscriber.drain()))
        return response
    finally:
        broker.unsubscribe(run_id, subscriber)


def _disconnect(request: web.Request) -> None:
    if request.transport is not None:
        request.transport.close()
