"""The TUI tests' one set of fixtures and factories, after datasette's `make_app_client`: a real
server holding the traces a test module names (`srv`, `http`), the UI on a server (`make_app`, and
the `app` fixture on `srv`), runs made and played through the real API (`create_run`, `play`,
`played_run`, the `run` fixture), and the walks to a list, New run or a run's screen.

`srv` holds what the `srv_traces` fixture gives; a module that wants other traces overrides that
fixture, as pytest overrides any fixture on the module level."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import httpx
import pytest

from cascade_core.models import TraceDetail
from cascade_tui.app import CascadeApp
from cascade_tui.screens.compare_runs import CompareRunsScreen
from cascade_tui.screens.new_run import NewRunScreen
from cascade_tui.screens.polled_table import PolledTable
from cascade_tui.screens.run import RunScreen
from cascade_tui.screens.runs_list import RunsScreen
from cascade_tui.widgets.log_view import LogView
from tests.conftest import TOKEN, LiveServer, ready_trace

from .helpers import Simulator, recorded_log, screen_text, tui_settings, wait_for_app, wait_for_text

UPDATE = os.environ.get("CASCADE_UPDATE_SNAPSHOTS") == "1"  # rewrite tests/tui/snapshots
TRACE = "tinyformer-step-sm70"
# The failed upload's error on `srv`: long, as a post-processing error with its advice is.
LONG_ERROR = (
    "post-processing failed: the upload has no traces/ directory (expected "
    "traces/kernelslist.g and one .traceg file per kernel; see the README's upload "
    "section for the layout `cascade upload` sends)"
)

# --- the server and its traces ----------------------------------------------------------------


def tinyformer(**fields: Any) -> TraceDetail:
    """The trace most tests run on: ready, 15 kernels of sm_70, SM7_QV100 suggested."""
    return ready_trace(TRACE, suggested_sim_config="SM7_QV100", **fields)


def broken_upload(error: str, **fields: Any) -> TraceDetail:
    """An upload whose post-processing failed with `error`."""
    return ready_trace("broken-upload", state="failed", error=error, **fields)


@pytest.fixture
def srv_traces() -> list[TraceDetail]:
    """The traces `srv` holds: the tinyformer trace, and a failed upload whose error is long and
    whose metadata names many layers (its error must still show)."""
    return [
        tinyformer(),
        broken_upload(
            LONG_ERROR,
            model="a-model-with-a-long-name",
            layers=[f"transformer.block{i}.attention" for i in range(12)],
        ),
    ]


async def serve(
    make_server: Callable[..., Awaitable[LiveServer]], traces: Iterable[TraceDetail] = (), **settings: Any
) -> LiveServer:
    """A real server (`make_server` with `settings`) holding `traces`."""
    server = await make_server(**settings)
    for trace in traces:
        await server.store.traces.put_trace(trace)
    return server


@pytest.fixture
async def srv(make_server, srv_traces: list[TraceDetail]) -> LiveServer:
    return await serve(make_server, srv_traces)


@pytest.fixture
async def http(srv: LiveServer) -> AsyncIterator[httpx.AsyncClient]:
    async with srv.client() as client:
        yield client


# --- runs, made and played through the API ----------------------------------------------------


# (config, count), or (config, count, simulator options) for a variant
Entry = tuple[str, int] | tuple[str, int, dict[str, str]]


async def create_run(http: httpx.AsyncClient, entries: list[Entry], trace_id: str = TRACE) -> dict:
    body = [
        {"gpu_config": entry[0], "count": entry[1], **({"options": entry[2]} if len(entry) > 2 else {})}
        for entry in entries
    ]
    resp = await http.post("/api/runs", json={"trace_id": trace_id, "entries": body})
    assert resp.status_code == 201, resp.text
    return resp.json()


async def play(
    http: httpx.AsyncClient, sim_id: str, log: list[str], end: str | None = "succeeded"
) -> Simulator:
    """The sim runs and writes `log`, then ends `succeeded`, `failed`, or (None) keeps running."""
    sim = Simulator(http, sim_id)
    await sim.beat("running")
    await sim.log(log)
    if end == "succeeded":
        await sim.beat("succeeded", exit_code=0)
    elif end == "failed":
        await sim.beat("failed", exit_code=134, error="assertion failed (SIGABRT)")
    return sim


async def played_run(http: httpx.AsyncClient, entries: list[Entry], trace_id: str = TRACE) -> dict:
    """A run whose every sim succeeded, writing its config's recorded Accel-Sim log."""
    run = await create_run(http, entries, trace_id)
    for sim in run["sims"]:
        await play(http, sim["id"], recorded_log(sim["gpu_config"]))
    return run


@pytest.fixture
async def run(http: httpx.AsyncClient) -> dict:
    """A run of one SM7_QV100 sim on the tinyformer trace, the sim not started."""
    return await create_run(http, [("SM7_QV100", 1)])


@pytest.fixture
def qv100_log() -> list[str]:
    """The whole stdout of a real Accel-Sim run on SM7_QV100, line by line."""
    return recorded_log("SM7_QV100")


async def sample_run(server: LiveServer) -> dict:
    """The sample run a server started with `samples=True` seeds."""
    async with server.client() as client:
        return next(r for r in (await client.get("/api/runs")).json() if r["sample"])


# --- the UI and the walks to its screens ------------------------------------------------------


def make_app(server: LiveServer, tmp_path: Path, token: str | None = TOKEN, **settings: Any) -> CascadeApp:
    """The UI on `server`, its downloads and config under `tmp_path`."""
    return CascadeApp(tui_settings(server.url, token, tmp_path, **settings))


@pytest.fixture
async def app(srv: LiveServer, tmp_path: Path) -> CascadeApp:
    """The UI on `srv` (`make_app`), to run with `app.run_test()`."""
    return make_app(srv, tmp_path)


async def on_list(pilot, screen_type: type[PolledTable], ids: list[str]) -> PolledTable:
    """Once the `screen_type` list shows, with `ids` on it: that list."""

    def listed() -> bool:
        screen = pilot.app.screen
        return isinstance(screen, screen_type) and all(i in screen.items for i in ids)

    await wait_for_app(pilot, listed, f"the list with {ids}")
    return pilot.app.screen


async def select(
    pilot, screen_type: type[PolledTable], item_id: str, listed: list[str] | None = None
) -> PolledTable:
    """On the `screen_type` list (with `listed` on it too), the cursor on `item_id`."""
    screen = await on_list(pilot, screen_type, listed or [item_id])
    screen.select(item_id)
    await wait_for_app(pilot, lambda: screen.selected_id() == item_id, f"the cursor on {item_id}")
    return screen


async def on_run_screen(pilot) -> RunScreen:
    """Once a run's screen shows, with its first snapshot."""
    await wait_for_app(
        pilot,
        lambda: isinstance(pilot.app.screen, RunScreen) and pilot.app.screen.model.has_snapshot,
        "the run screen",
    )
    return pilot.app.screen


async def open_run_screen(pilot, run_id: str) -> RunScreen:
    """From the Runs list, `Enter` on the run, until its screen has a snapshot."""
    await select(pilot, RunsScreen, run_id)
    await pilot.press("enter")
    return await on_run_screen(pilot)


async def log_tail(pilot, run_id: str, lines: int) -> LogView:
    """On the run's screen, its log pane once it holds the sim's `lines`-line tail."""
    screen = await open_run_screen(pilot, run_id)
    view = screen.query_one(LogView)
    await wait_for_app(pilot, lambda: len(view.store) == lines, f"the {lines:,}-line tail")
    return view


async def open_new_run(pilot) -> NewRunScreen:
    """From the Runs list, `n`: New run on the first ready trace, its suggested config picked."""
    await on_list(pilot, RunsScreen, [])
    await pilot.press("n")
    await wait_for_text(pilot, "[x] SM7_QV100")
    screen = pilot.app.screen
    assert isinstance(screen, NewRunScreen)
    return screen


def table_rows(app: CascadeApp, state: str) -> list[str]:
    """Sims-table lines showing `state` (a row starts with its config name)."""
    return [line for line in screen_text(app).splitlines() if line.startswith("SM") and state in line]


async def comparison(pilot, screen_type: type[CompareRunsScreen], shows: str = "Total simulated time") -> str:
    """Once a comparison screen of `screen_type` (runs or traces) shows `shows`, its whole text."""

    def shown() -> CompareRunsScreen | None:
        screen = pilot.app.screen
        return screen if isinstance(screen, screen_type) and shows in screen.text else None

    await wait_for_app(pilot, shown, "the comparison")
    return pilot.app.screen.text
