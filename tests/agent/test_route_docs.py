"""The route docs (`route_docs.ROUTE_DOCS`) that the agent prompt's API table and the HTTP API
reference (docs/reference/api.md) are generated from: one entry per route the app serves, none
for a route it does not, and each entry's body, query and status those its handler reads and
sends; the reference's auth column what the server enforces. (That the committed page is what
the generator makes is tests/test_docs.py's.)"""

from __future__ import annotations

import inspect
import re

import httpx
import pytest
from aiohttp import web

from cascade_server.api import agent_prompt_routes, agent_routes, api_reference
from cascade_server.api.agent_prompt_routes import canonical
from cascade_server.api.route_docs import ROUTE_DOCS
from cascade_server.api.route_tables import API_ROUTE_TABLES
from tests.conftest import TOKEN, LiveServer


def route_defs() -> dict[tuple[str, str], web.RouteDef]:
    return {
        (route.method, canonical(route.path)): route
        for table in (*API_ROUTE_TABLES, agent_routes.routes)
        for route in table
        if isinstance(route, web.RouteDef)
    }


async def test_the_reference_documents_every_route_the_app_serves_and_no_other(server: LiveServer):
    pages = [(route.method, route.path) for route in agent_routes.routes if isinstance(route, web.RouteDef)]
    served = agent_prompt_routes.app_routes(server.app) + pages
    documented = [(method, path) for method, path, _ in api_reference.routes()]
    assert documented == served  # in the app's order
    assert sorted(ROUTE_DOCS) == sorted(served)  # an entry for each, none for a route that is gone
    page = api_reference.page_text()
    for method, path in served:
        assert f"\n### `{method} {path}`\n" in page
    # The two the hand-written page had left out.
    assert "### `GET /api/accuracy`" in page and "### `GET /api/gpu-configs/{name}/options`" in page


@pytest.mark.parametrize("key", sorted(route_defs()), ids=lambda key: f"{key[0]} {key[1]}")
def test_each_entry_says_the_body_query_and_status_its_handler_reads_and_sends(key):
    source = inspect.getsource(route_defs()[key].handler)
    doc = ROUTE_DOCS[key]
    body = re.findall(r"read_model\(request, (\w+)\)", source)
    query = re.findall(r"read_query\(request, (\w+)\)", source)
    if isinstance(doc.body, str):  # not JSON: read as bytes
        assert body == [] and "body_blocks(request)" in source
    else:
        assert body == ([doc.body.__name__] if doc.body else [])
    assert query == ([doc.query.__name__] if doc.query else [])
    statuses = {int(s) for s in re.findall(r"status=(\d+)", source)} or {200}
    assert statuses == {doc.status}
    # A body is either a model or words, and the reference can say which.
    assert (doc.response is None) != (doc.returns == "") or doc.status == 204


async def test_the_auth_column_is_what_the_server_enforces(server: LiveServer):
    async with httpx.AsyncClient(base_url=server.url) as anonymous:
        for method, path, auth in api_reference.routes():
            url = re.sub(r"\{\w+\}", "x", path)
            status = (await anonymous.request(method, url)).status_code
            assert (status == 401) == (auth != "none"), f"{method} {path}: {status} without a token"
            if auth == "token or query":
                assert (await anonymous.request(method, url, params={"token": "wrong"})).status_code == 401
                assert (await anonymous.request(method, url, params={"token": TOKEN})).status_code == 404
