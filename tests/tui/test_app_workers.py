"""The terminal UI against a real server whose local launcher starts real `cascade worker`
processes in stand-in mode (replaying recorded Accel-Sim logs): what an operator does on day one."""

from __future__ import annotations

import pytest

from cascade_tui.screens.modals import ConfirmScreen
from cascade_tui.screens.new_run import NewRunScreen
from cascade_tui.screens.runs_list import RunsScreen
from cascade_tui.widgets.log_view import LogView

from .conftest import TRACE, create_run, make_app, on_list, on_run_screen, serve, table_rows, tinyformer
from .helpers import recorded_log, screen_text, wait_for_app, wait_for_text

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def worker_env(monkeypatch):
    """Workers inherit the server's environment: quick heartbeats and a short kill grace."""
    monkeypatch.setenv("CASCADE_HEARTBEAT_INTERVAL_S", "0.5")
    monkeypatch.setenv("CASCADE_KILL_GRACE_S", "3")


@pytest.mark.slow
async def test_launch_from_keyboard_stand_in_sims_succeed_then_log_and_kernels(
    make_server, worker_env, tmp_path
):
    server = await serve(make_server, [tinyformer()], launcher="local", local_slots=2, replay_speed=25.0)
    app = make_app(server, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await on_list(pilot, RunsScreen, [])
        await pilot.press("t")
        await wait_for_text(pilot, TRACE)
        await pilot.press("n")
        await wait_for_text(pilot, "SM7_QV100            sm_70")
        assert isinstance(app.screen, NewRunScreen)
        names = [c.name for c in app.screen.configs]
        app.screen.query_one("#configs").highlighted = names.index("SM7_GV100")
        await pilot.press("space")
        await wait_for_text(pilot, "2 configs, 2 sims in total")
        await pilot.press("enter")
        screen = await on_run_screen(pilot)

        await wait_for_app(
            pilot,
            lambda: len(table_rows(app, "✔ succeeded")) == 2,
            "both stand-in sims to succeed in the table",
            timeout=180,
        )
        text = screen_text(app)
        assert "✔ succeeded" in text.splitlines()[1]  # the run's state in the header
        assert "15/15" in text
        # No Accel-Sim here, so the server ran the stand-in and says so: the UI must too.
        assert "Stand-in numbers, not a simulation of this trace" in text

        # Read a log: the selected sim's whole replayed log, ending with the exit line.
        sim = screen.model.sims[screen.selected_sim]
        expected = recorded_log(sim.gpu_config)
        view = screen.query_one(LogView)
        await wait_for_app(
            pilot,
            lambda: len(view.store) == len(expected) and view.store.lines[-1] == expected[-1],
            "the whole log in the pane",
        )
        await pilot.press("down")  # the other sim
        await wait_for_app(
            pilot,
            lambda: (
                screen.selected_sim != sim.id
                and view.store.lines[-1:] == [expected[-1]]
                and f"{screen.model.sims[screen.selected_sim].gpu_config} #0" in screen_text(app)
            ),
            "the other sim's log",
        )

        await pilot.press("k")
        text = await wait_for_text(pilot, "Total simulated time per config")
        assert "SM7_QV100" in text and "SM7_GV100" in text
        assert "embedding_kernel" in text and "sgemm_tiled<64, 64, 16>" in text
        # Stand-in numbers: the totals are shown, but no config is named fastest or a multiple.
        words = " ".join(text.split())
        assert "No config is named fastest: these numbers compare nothing" in words
        assert words.count("Stand-in numbers") == 1  # the banner, once
        assert "is fastest" not in words and "tie for fastest" not in words
        assert "Others:" not in words


@pytest.mark.slow
async def test_cancel_a_running_stand_in_run(make_server, worker_env, tmp_path):
    server = await serve(make_server, [tinyformer()], launcher="local", local_slots=2, replay_speed=0.5)
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 2)])
    app = make_app(server, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await on_list(pilot, RunsScreen, [])
        await wait_for_text(pilot, run["id"])
        await pilot.press("enter")
        await wait_for_app(
            pilot, lambda: len(table_rows(app, "▶ running")) == 2, "both sims running", timeout=60
        )
        await pilot.press("x")
        await wait_for_app(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.press("y")
        await wait_for_app(
            pilot, lambda: len(table_rows(app, "■ cancelled")) == 2, "both sims cancelled", timeout=60
        )
    async with server.client() as http:
        assert (await http.get(f"/api/runs/{run['id']}")).json()["state"] == "cancelled"
