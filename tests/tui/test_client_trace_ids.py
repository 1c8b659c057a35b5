"""A trace whose id the scanner refused (a newline in its bucket prefix, issue 19) is still a
failed trace the UI shows and deletes: the client sends its id as one quoted path segment."""

from __future__ import annotations

from cascade_tui.connection.client import CascadeClient
from tests.conftest import TOKEN, ready_trace

from .conftest import serve


async def test_the_client_reads_and_deletes_a_trace_whose_id_holds_a_newline(make_server):
    ids = ("bad\n", "a b\t%2F")
    server = await serve(
        make_server, [ready_trace(i, state="failed", error="trace id is not valid") for i in ids]
    )
    async with CascadeClient(server.url, TOKEN) as client:
        for trace_id in ids:
            assert (await client.trace(trace_id)).id == trace_id
            await client.delete_trace(trace_id)
        assert [t.id for t in await client.traces()] == []
    assert await server.store.traces.get_trace("bad\n") is None
