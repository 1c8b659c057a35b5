"""A worker keeps its output while the server's disk is full: 507 is retried like a 503, so
the chunk is delivered once space returns (against a real aiohttp server on a real port)."""

from __future__ import annotations

from aiohttp import web

from cascade_core.models import LogChunk
from cascade_worker.client import SimClient
from tests.helpers import free_port


async def test_a_507_is_retried_until_the_server_has_space_again() -> None:
    received: list[dict] = []

    async def logs(request: web.Request) -> web.Response:
        received.append(await request.json())
        if len(received) <= 2:
            return web.json_response({"detail": "the server's disk is full"}, status=507)
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/api/sims/{sim_id}/logs", logs)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()

    async def no_wait(_: float) -> None:
        return None

    try:
        async with SimClient(f"http://127.0.0.1:{port}", "t", "sim-000000000001", sleep=no_wait) as client:
            await client.send_chunk(LogChunk(seq=0, lines=["kept"]))
    finally:
        await runner.cleanup()
    assert [r["seq"] for r in received] == [0, 0, 0]
