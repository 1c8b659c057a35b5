"""Manage (issue 13): re-run a run, retry its failed sims, delete a finished run or a trace, each
asked first, from the lists and the run screen, against a real server's routes."""

from __future__ import annotations

import pytest

from cascade_tui.screens.modals import ConfirmScreen
from cascade_tui.screens.run import RunScreen
from cascade_tui.screens.runs_list import RunsScreen
from cascade_tui.screens.traces_list import TracesScreen

from .conftest import TRACE, create_run, on_list, open_run_screen, select
from .helpers import Simulator, record_notifications, screen_text, wait_for_app


async def confirm(pilot, expected: str, answer: str = "y") -> None:
    await wait_for_app(
        pilot,
        lambda: isinstance(pilot.app.screen, ConfirmScreen) and expected in screen_text(pilot.app),
        f"the question {expected!r}",
    )
    await pilot.press(answer)


@pytest.mark.slow
async def test_rerun_and_retry_from_the_runs_list_open_the_new_run(app, http):
    run = await create_run(http, [("SM7_QV100", 1), ("SM7_TITANV", 1)])
    failing = Simulator(http, run["sims"][1]["id"])
    await failing.beat("running")
    await failing.beat("failed", exit_code=1, error="boom")
    async with app.run_test(size=(100, 30)) as pilot:
        await on_list(pilot, RunsScreen, [run["id"]])
        await pilot.press("R")
        await confirm(pilot, f"Re-run {run['id']}?", answer="n")  # no: nothing happens
        await on_list(pilot, RunsScreen, [])
        assert len((await http.get("/api/runs")).json()) == 1
        await pilot.press("R")
        await confirm(pilot, "SM7_QV100 × 1, SM7_TITANV × 1")
        await wait_for_app(
            pilot,
            lambda: isinstance(app.screen, RunScreen) and app.screen.run_id != run["id"],
            "the new run open",
        )
        rerun = app.screen.run_id
        detail = (await http.get(f"/api/runs/{rerun}")).json()
        assert [e["gpu_config"] for e in detail["entries"]] == ["SM7_QV100", "SM7_TITANV"]
        await pilot.press("r")
        await select(pilot, RunsScreen, run["id"], [run["id"], rerun])
        await pilot.press("Y")
        await confirm(pilot, "Retry the failed sims of")
        await wait_for_app(
            pilot,
            lambda: isinstance(app.screen, RunScreen) and app.screen.run_id not in (run["id"], rerun),
            "the retry open",
        )
        retry = (await http.get(f"/api/runs/{app.screen.run_id}")).json()
        assert [(s["gpu_config"]) for s in retry["sims"]] == ["SM7_TITANV"]


@pytest.mark.slow
async def test_delete_a_finished_run_from_its_screen_but_never_an_active_one(app, http, run):
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        seen = record_notifications(app)
        await open_run_screen(pilot, run["id"])
        await pilot.press("D")
        await wait_for_app(pilot, lambda: any("cancel it first" in m for m in seen()), "the refusal")
        assert not isinstance(app.screen, ConfirmScreen)
        await pilot.press("x")
        await confirm(pilot, f"Cancel {run['id']}?")
        await wait_for_app(pilot, lambda: app.screen.model.state() == "cancelled", "cancelled")
        await pilot.press("D")
        await confirm(pilot, "This cannot be undone")
        await wait_for_app(
            pilot,
            lambda: isinstance(app.screen, RunsScreen) and run["id"] not in app.screen.items,
            "back on Runs, the run gone",
        )
    assert (await http.get(f"/api/runs/{run['id']}")).status_code == 404


async def test_delete_a_trace_from_the_traces_list(app, http):
    async with app.run_test(size=(100, 30)) as pilot:
        await on_list(pilot, RunsScreen, [])
        await pilot.press("t")
        traces = await select(pilot, TracesScreen, "broken-upload", ["broken-upload", TRACE])
        await pilot.press("D")
        await confirm(pilot, "Delete trace broken-upload?")
        await wait_for_app(pilot, lambda: "broken-upload" not in traces.items, "the trace gone")
    assert (await http.get("/api/traces/broken-upload")).status_code == 404
