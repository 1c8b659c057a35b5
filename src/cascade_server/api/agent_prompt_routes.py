"""The agent prompt's API table, generated from the route table the app is built from
(`route_tables.API_ROUTE_TABLES`), or from a running app's router: every `/api/` route is a row, whatever it
is called. What a route does is written once, in `route_docs.ROUTE_DOCS` (which the HTTP API
reference is generated from too); a route without an entry gets a row that says so (a test keeps
there being none), and an entry for an `/api/` route the app no longer has is an error
(`stale_notes`)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from aiohttp import web

from .route_docs import ROUTE_DOCS
from .route_sections import auth, route_section
from .route_tables import API_ROUTE_TABLES

NO_NOTE = "(not described yet)"

_PATTERN = re.compile(r"\{(\w+):[^}]*\}")  # `{path:.+}` -> `{path}`, as the router's canonical form


def canonical(path: str) -> str:
    return _PATTERN.sub(r"{\1}", path)


def app_routes(app: web.Application) -> list[tuple[str, str]]:
    """(method, path) of every /api/ route a running app serves (HEAD, which aiohttp adds to
    every GET, left out)."""
    found = [
        (route.method, route.resource.canonical)
        for route in app.router.routes()
        if route.resource is not None and route.method != "HEAD"
    ]
    return list(dict.fromkeys((m, p) for m, p in found if p.startswith("/api/")))


def table_routes() -> list[tuple[str, str]]:
    """The same, from the route tables the app is built from (no app needed: `cascade agent-prompt`)."""
    found = [
        (route.method, canonical(route.path))
        for table in API_ROUTE_TABLES
        for route in table
        if isinstance(route, web.RouteDef)
    ]
    return list(dict.fromkeys((m, p) for m, p in found if p.startswith("/api/")))


def route_names() -> dict[tuple[str, str], str | None]:
    """(method, path) -> the route's name in the tables the app is built from (the auth rules
    read it: the event stream takes its token in the query too)."""
    return {
        (route.method, canonical(route.path)): route.kwargs.get("name")
        for table in API_ROUTE_TABLES
        for route in table
        if isinstance(route, web.RouteDef)
    }


def routes_section(routes: Iterable[tuple[str, str]]) -> str:
    """A section per route an agent may call, as the reference writes it (`route_sections`), the
    types by name; a route for simulators only has its table row, which says never to call it."""
    names = route_names()
    parts = []
    for method, path in routes:
        doc = ROUTE_DOCS.get((method, path))
        if doc is None or doc.simulator_only:
            continue
        parts.append(route_section(method, path, auth(path, names.get((method, path)))))
    return "\n".join(parts)


def note(method: str, path: str) -> str:
    doc = ROUTE_DOCS.get((method, path))
    return doc.prompt_note if doc else NO_NOTE


def api_table(routes: Iterable[tuple[str, str]]) -> str:
    rows = ["| method | path | what it does |", "|---|---|---|"]
    rows += [f"| {method} | `{path}` | {note(method, path)} |" for method, path in routes]
    return "\n".join(rows) + "\n"


def stale_notes(routes: Iterable[tuple[str, str]]) -> list[str]:
    served = set(routes)
    return [
        f"{method} {path}"
        for method, path in ROUTE_DOCS
        if path.startswith("/api/") and (method, path) not in served
    ]
