"""The run screen's step-timeline pane (`T`), on a real server: a sim posts its step timeline as
`cascade worker` does, the pane shows predicted steps against the real ones; the key is in `?`
and the command palette; a trace without a step timeline says how to get one."""

from __future__ import annotations

from cascade_tui.screens.modals import HelpScreen
from cascade_tui.screens.run import RunScreen
from tests.conftest import ready_trace

from .conftest import create_run, make_app, open_run_screen, play, serve
from .helpers import recorded_log, screen_text, wait_for_app, wait_for_text
from .test_step_chart import _timeline


async def test_step_timeline_pane_shows_predicted_steps_against_real(make_server, tmp_path):
    server = await serve(
        make_server,
        [ready_trace("stepped", has_step_timeline=True, has_real_timing=True), ready_trace("plain")],
    )
    async with server.client() as http:
        plain_run = await create_run(http, [("SM7_QV100", 1)], "plain")  # older: second in the runs list
        run = await create_run(http, [("SM7_QV100", 1)], "stepped")
        sim_id = run["sims"][0]["id"]
        await play(http, sim_id, recorded_log("SM7_QV100"))
        sent = _timeline("SM7_QV100", 0, 2.0)
        resp = await http.post(
            f"/api/sims/{sim_id}/step-timeline", json={"simulated": sent.simulated, "compare": sent.compare}
        )
        assert resp.status_code == 204
    app = make_app(server, tmp_path)
    async with app.run_test(size=(100, 40)) as pilot:
        await open_run_screen(pilot, run["id"])
        run_screen = app.screen
        await pilot.press("T")
        text = await wait_for_text(pilot, "Predicted step wall per config")
        assert "SM7_QV100  1 replica  2/2 kernels simulated, 100% of GPU time" in text
        assert "step wall error: mean +80.0%" in text
        assert "#0 ProfilerStep#0 (prefill)" in text and "#1 ProfilerStep#1 (decode)" in text
        assert "  prefill: wall 1.8 µs" in text
        # The keyboard is on the pane (to scroll it); Tab goes to the sims table and back.
        assert app.focused is not None and app.focused.id == "step-chart"
        await pilot.press("tab")
        assert app.focused is not None and app.focused.id == "sims"
        await pilot.press("tab")
        assert app.focused is not None and app.focused.id == "step-chart"

        await pilot.press("question_mark")
        await wait_for_app(pilot, lambda: isinstance(app.screen, HelpScreen), "the help screen")
        assert "run.steps" in screen_text(app) and "Step timeline" in screen_text(app)
        await pilot.press("escape")
        await wait_for_app(pilot, lambda: app.screen is run_screen, "help to close")
        assert "Step timeline" in {c.title for c in app.get_system_commands(run_screen)}

        await pilot.press("escape")  # back to the runs list, then the run on a plain trace
        await wait_for_text(pilot, plain_run["id"])
        await pilot.press("down", "enter")
        await wait_for_app(
            pilot,
            lambda: (
                isinstance(app.screen, RunScreen)
                and app.screen.run_id == plain_run["id"]
                and app.screen.model.has_snapshot
            ),
            "the plain run's screen",
        )
        await pilot.press("T")
        await wait_for_text(pilot, "This trace has no step timeline")
