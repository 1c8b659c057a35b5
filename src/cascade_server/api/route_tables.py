"""The route tables of the HTTP API (every `/api/` route), in the order the app adds them. The
agent prompt's API table (agent_prompt_routes) and the HTTP API reference (api_reference) are
generated from them too, with what each route is from route_docs, so both list every route the
API has. The prompt's own pages (agent_routes: `/agent-prompt.md`, `SKILL.md`) are no
`/api/` route and are not here: the app adds them after these, and the prompt, which lists these,
is no import of theirs in turn."""

from __future__ import annotations

from aiohttp import web

from . import (
    config_routes,
    core_routes,
    event_routes,
    manage_routes,
    run_output_routes,
    sim_routes,
    trace_input_routes,
    variant_routes,
)

API_ROUTE_TABLES: tuple[web.RouteTableDef, ...] = tuple(
    module.routes
    for module in (
        core_routes,
        manage_routes,
        sim_routes,
        run_output_routes,
        event_routes,
        trace_input_routes,
        variant_routes,
        config_routes,
    )
)
