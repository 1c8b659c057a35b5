"""The agent prompt's API table, generated from the route table the app is built from
(`route_tables.API_ROUTE_TABLES`), or from a running app's router: every `/api/` route is a row, whatever it
is called. What a route does is written once here, keyed by method and path; a route without a
note gets a row that says so (a test keeps there being none), and a note for a route the app no
longer has is an error (`stale_notes`)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from aiohttp import web

from .route_tables import API_ROUTE_TABLES

SIMULATOR_ONLY = "For simulators only: never call it."
NO_NOTE = "(not described yet)"

ROUTE_NOTES: dict[tuple[str, str], str] = {
    (
        "GET",
        "/api/health",
    ): "Liveness: `ok`, `auth`, `workspace`, `s3_endpoint`, `s3_error` (why the S3 endpoint "
    "is failing, or null). Needs no token.",
    ("GET", "/api/launcher"): "Where new sims go and how busy it is: `name`, `slots`, `running`, `queued`, "
    "`partition` (a `LauncherStatus`).",
    ("GET", "/api/traces"): "Every trace, newest first. `?state=` (repeatable) and `?limit=` filter.",
    ("GET", "/api/traces/{trace_id}"): "One trace with its metadata and kernels (a `TraceDetail`).",
    ("GET", "/api/gpu-configs"): "The GPU configs a run can use.",
    ("GET", "/api/gpu-configs/{name}/options"): "The simulator options a config takes, with its values "
    "(`ConfigOption`): what a run entry's `options` may set.",
    ("GET", "/api/accuracy"): "Per trace with real timing and per variant: kernels compared, `mape_pct`, "
    "`mean_error_pct`, `pearson_r` (log-log), the `worst` kernels (`AccuracyRow`). "
    "`?trace=`, `?config=` filter.",
    ("POST", "/api/runs"): "Launch sims for a ready trace (body: `RunCreate`): `201` with the `RunDetail`.",
    ("GET", "/api/runs"): "Every run, newest first. `?state=` (repeatable) and `?limit=` filter.",
    ("GET", "/api/runs/{run_id}"): "One run with its trace and every sim (a `RunDetail`).",
    ("POST", "/api/runs/{run_id}/cancel"): "Cancel every unfinished sim. Safe to repeat.",
    ("DELETE", "/api/runs/{run_id}"): "Delete a finished run and its outputs: `204`.",
    ("POST", "/api/runs/{run_id}/rerun"): "A new run of the same trace and entries: `201` with it.",
    ("POST", "/api/runs/{run_id}/retry"): "A new run with one sim per failed sim: `201` with it.",
    ("DELETE", "/api/traces/{trace_id}"): "Delete a ready or failed trace no active run uses: `204`.",
    ("POST", "/api/sims/{sim_id}/heartbeat"): SIMULATOR_ONLY,
    ("POST", "/api/sims/{sim_id}/logs"): SIMULATOR_ONLY,
    ("POST", "/api/sims/{sim_id}/step-timeline"): SIMULATOR_ONLY,
    ("PUT", "/api/sims/{sim_id}/files/{name}"): SIMULATOR_ONLY,
    ("GET", "/api/traces/{trace_id}/inputs"): SIMULATOR_ONLY + " Lists a trace's instruction files.",
    ("GET", "/api/traces/{trace_id}/inputs/{path}"): SIMULATOR_ONLY + " Serves one, and they are large.",
    ("GET", "/api/sims/{sim_id}/log"): "The sim's full raw output, as plain text.",
    ("GET", "/api/runs/{run_id}/kernels"): "Every sim's per-kernel stats (`KernelStat`), without the full "
    "stats maps.",
    ("GET", "/api/runs/{run_id}/comparison"): "Per-kernel real time against simulated time per config "
    "(a `Comparison`).",
    ("GET", "/api/sims/{sim_id}/results"): "One sim's config, per-kernel stats and totals (a `SimResults`).",
    ("GET", "/api/runs/{run_id}/results"): "One JSON file with the run, trace, every sim's stats and the "
    "comparison (a `RunResults`, about 30 KB per kernel).",
    ("GET", "/api/runs/{run_id}/perfetto"): "The run's simulated kernels (and predicted steps) as a Chrome "
    "trace JSON for ui.perfetto.dev.",
    (
        "GET",
        "/api/runs/{run_id}/step-timelines",
    ): "Each sim's predicted step timeline and its comparison with the real run (`SimStepTimeline`).",
    ("GET", "/api/runs/{run_id}/files"): "Every output file the run's sims uploaded (`RunFile`).",
    ("GET", "/api/sims/{sim_id}/files"): "The output files one sim uploaded (`SimFile`).",
    ("GET", "/api/sims/{sim_id}/files/{name}"): "One output file, as the sim uploaded it.",
    (
        "GET",
        "/api/runs/{run_id}/events",
    ): "Server-sent events for one run: a `snapshot`, then `sim`, `log` and `kernel` (see the event types).",
}

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


def api_table(routes: Iterable[tuple[str, str]]) -> str:
    rows = ["| method | path | what it does |", "|---|---|---|"]
    rows += [
        f"| {method} | `{path}` | {ROUTE_NOTES.get((method, path), NO_NOTE)} |" for method, path in routes
    ]
    return "\n".join(rows) + "\n"


def stale_notes(routes: Iterable[tuple[str, str]]) -> list[str]:
    served = set(routes)
    return [f"{method} {path}" for method, path in ROUTE_NOTES if (method, path) not in served]
