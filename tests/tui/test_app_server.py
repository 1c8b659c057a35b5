"""The terminal UI against a real server (real port, real SQLite, real routes and event stream).

Here the server runs the `manual` launcher and the test plays each sim through the real simulator
endpoints with a recorded Accel-Sim log, so every number on screen is deterministic. The same flows
with real stand-in worker processes are in test_app_workers.py.
"""

from __future__ import annotations

import httpx
import pytest

from cascade_tui.app import CascadeApp
from cascade_tui.screens.modals import ConfirmScreen, HelpScreen, help_text
from cascade_tui.screens.new_run import NewRunScreen
from cascade_tui.screens.run import RunScreen
from cascade_tui.screens.runs_list import RunsScreen
from cascade_tui.screens.traces_list import TracesScreen
from cascade_tui.widgets.log_view import LogView
from tests.conftest import TOKEN, ready_trace
from tests.helpers import recorded_kernel_names, store_real_timing

from .conftest import (
    TRACE,
    broken_upload,
    create_run,
    log_tail,
    make_app,
    on_list,
    on_run_screen,
    open_new_run,
    open_run_screen,
    play,
    serve,
    table_rows,
    tinyformer,
)
from .helpers import (
    ServeProcess,
    Simulator,
    record_notifications,
    recorded_log,
    screen_text,
    tui_settings,
    wait_for_app,
    wait_for_flat_text,
    wait_for_text,
)


@pytest.fixture
def srv_traces():
    return [tinyformer(), broken_upload("metadata.json says status: failed")]


@pytest.mark.slow
async def test_launch_from_keyboard_watch_sims_succeed_read_log_and_kernels(app, http):
    async with app.run_test(size=(120, 40)) as pilot:
        await on_list(pilot, RunsScreen, [])
        await pilot.press("t")
        text = await wait_for_text(pilot, TRACE)
        assert isinstance(app.screen, TracesScreen)
        assert "metadata.json says status: failed" in text, text  # a failed trace shows its error

        # The first row is the newest trace; move to ours and open New run.
        table = app.screen.query_one("DataTable")
        table.move_cursor(row=table.get_row_index(TRACE))
        await pilot.press("n")
        await wait_for_text(pilot, "[x] SM7_QV100")
        assert isinstance(app.screen, NewRunScreen)
        text = screen_text(app)
        assert "(suggested)" in text and "SM75_RTX2060" not in text  # only the trace's arch
        # Also pick SM7_TITANV: move to it, space; then launch with Enter.
        names = [c.name for c in app.screen.configs]
        options = app.screen.query_one("#configs")
        options.highlighted = names.index("SM7_TITANV")
        await pilot.press("space")
        await wait_for_text(pilot, "2 configs, 2 sims in total")
        await pilot.press("enter")

        screen = await on_run_screen(pilot)
        await wait_for_text(pilot, "LIVE")
        runs = (await http.get("/api/runs")).json()
        assert len(runs) == 1 and runs[0]["id"] == screen.run_id  # launched exactly once

        log = recorded_log("SM7_QV100")
        for sim_id in screen.model.sims:
            await play(http, sim_id, log)
        await wait_for_app(
            pilot, lambda: len(table_rows(app, "✔ succeeded")) == 2, "both sims succeeded in the table"
        )
        text = screen_text(app)
        assert "✔ succeeded" in text and "2 succeeded" in text
        assert "15/15" in text
        assert "Stand-in numbers" not in text  # 15 kernels done of the trace's 15

        # The log pane follows the selected sim: its tail ends with the simulator's exit line.
        await wait_for_app(
            pilot,
            lambda: screen.query_one(LogView).store.lines[-1:] == ["GPGPU-Sim: *** exit detected ***"],
            "the log tail",
        )
        assert f"{len(log):,} lines" in screen_text(app)

        await pilot.press("k")
        text = await wait_for_text(pilot, "Total simulated time per config")
        assert "embedding_kernel" in text  # demangled
        assert "SM7_QV100" in text and "SM7_TITANV" in text
        assert "fastest" in text or "tie" in text


async def test_a_sim_not_started_says_so_in_the_log_pane_not_0_lines(app, http, run):
    sim = Simulator(http, run["sims"][0]["id"])
    async with app.run_test(size=(100, 30)) as pilot:
        await open_run_screen(pilot, run["id"])
        # (the manual launcher has it `launching`: its worker is for a person to start)
        text = await wait_for_text(pilot, "starting: no log yet · log SM7_QV100")
        assert "0 lines" not in text
        await sim.beat("running")
        await sim.log(["GPGPU-Sim: the simulator speaks"])
        await wait_for_text(pilot, "following · 1 line · log SM7_QV100")


@pytest.mark.slow
async def test_log_pane_follows_pauses_with_count_resumes_and_searches(app, http, run, qv100_log):
    sim = await play(http, run["sims"][0]["id"], qv100_log[:20_000], end=None)
    async with app.run_test(size=(100, 30)) as pilot:
        view = await log_tail(pilot, run["id"], 20_000)
        assert view.following

        view.focus()
        await pilot.press("pageup", "pageup")
        await wait_for_app(pilot, lambda: not view.following, "following to pause")
        await sim.log(qv100_log[20_000:20_500])
        text = await wait_for_text(pilot, "paused +500 lines (End to follow)")
        assert "following" not in text.split("paused")[0].splitlines()[-1]
        app.screen.query_one("SimTable").focus()  # End works from the sims table too
        await pilot.press("end")
        await wait_for_text(pilot, "following · 20,500 lines")
        assert view.scroll_y == view.max_scroll_y

        await pilot.press("slash")
        await pilot.press(*"kernel_name = _Z18attn")
        await pilot.press("enter")
        await wait_for_app(pilot, lambda: view.current_match is not None, "a search match")
        line = view.store.lines[view.current_match]
        assert line.startswith("kernel_name = _Z18attn_scores_kernel")
        assert not view.following
        await pilot.press("n")  # the pattern occurs once in these lines: wraps to itself
        assert view.store.lines[view.current_match].startswith("kernel_name = _Z18attn")


async def test_escape_in_the_log_search_closes_only_the_search(app, run):
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_run_screen(pilot, run["id"])
        search = screen.query_one("#search")
        await pilot.press("slash")
        await wait_for_app(pilot, lambda: search.has_focus, "the search box")
        await pilot.press("escape")
        await wait_for_app(pilot, lambda: not search.display, "the search box to close")
        await pilot.pause()
        assert app.screen is screen, "Esc in the search also left the run screen"
        assert screen.query_one("SimTable").has_focus
        await pilot.press("escape")  # with the search closed, Esc goes back
        await on_list(pilot, RunsScreen, [])


@pytest.mark.slow
async def test_escape_after_a_search_drops_it_then_goes_back(app, run):
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_run_screen(pilot, run["id"])
        view = screen.query_one(LogView)
        await pilot.press("slash", *"kernel", "enter")
        await wait_for_app(pilot, lambda: view.pattern is not None, "the search to apply")
        await pilot.press("escape")
        await wait_for_app(pilot, lambda: view.pattern is None, "the search dropped")
        assert app.screen is screen, "the first Esc after a search left the run screen"
        await pilot.press("escape")
        await on_list(pilot, RunsScreen, [])


async def test_a_failing_worker_is_notified_once_by_the_app_and_the_ui_goes_on(app, run):
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await open_run_screen(pilot, run["id"])
        messages = record_notifications(app)
        # A pane's worker meets a 404: the app's one handler shows the server's detail.
        app.screen.files_pane.download("files", "sim-000000000000")
        await wait_for_app(pilot, lambda: app.errors, "the error")
        assert app.errors == ["404: sim sim-000000000000 not found"], app.errors
        assert messages() == app.errors  # notified once
        assert isinstance(app.screen, RunScreen) and app.is_running
        assert TOKEN not in screen_text(app)


@pytest.mark.slow
async def test_log_pane_scrolls_from_the_keyboard_after_tab(app, http, run, qv100_log):
    sim = await play(http, run["sims"][0]["id"], qv100_log[:3000], end=None)
    async with app.run_test(size=(100, 30)) as pilot:
        view = await log_tail(pilot, run["id"], 3000)
        assert app.screen.query_one("SimTable").has_focus
        await pilot.press("tab")
        assert view.has_focus
        await wait_for_text(pilot, "▶ following · 3,000 lines · log SM7_QV100")  # marked
        await pilot.press("up")
        assert not view.following
        await pilot.press("pageup", "pageup")
        assert view.scroll_y < view.max_scroll_y - 2
        await sim.log(qv100_log[3000:3040])
        await wait_for_text(pilot, "paused +40 lines (End to follow)")
        await pilot.press("end")
        await wait_for_text(pilot, "following · 3,040 lines")
        assert view.scroll_y == view.max_scroll_y
        await pilot.press("home")
        assert view.scroll_y == 0 and not view.following
        await pilot.press("shift+tab")
        assert app.screen.query_one("SimTable").has_focus
        assert "▶ following" not in screen_text(app)


@pytest.mark.slow
async def test_runs_and_traces_keys_work_on_the_run_screen(app, run):
    async with app.run_test(size=(100, 30)) as pilot:
        await open_run_screen(pilot, run["id"])
        await wait_for_text(pilot, "● LIVE")
        assert f"trace {TRACE}" in screen_text(app).splitlines()[1]  # at 100 columns too
        run_screen = app.screen
        await pilot.press("question_mark")
        await wait_for_app(pilot, lambda: isinstance(app.screen, HelpScreen), "the help screen")
        # The app-wide keys come last of the keys (what the columns and numbers mean follows).
        body = help_text(run_screen).plain
        assert "app.runs" in body and "app.traces" in body
        assert body.index("app.traces") < body.index("Sims table columns")
        await pilot.press("escape")
        await wait_for_app(pilot, lambda: isinstance(app.screen, RunScreen), "help to close")
        await pilot.press("t")
        await wait_for_app(pilot, lambda: isinstance(app.screen, TracesScreen), "the traces list")
        await pilot.press("r")
        await on_list(pilot, RunsScreen, [])
        await pilot.press("enter")
        await wait_for_app(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen again")
        await pilot.press("r")
        await on_list(pilot, RunsScreen, [])


@pytest.mark.slow
async def test_new_run_above_four_sims_confirms_and_launches_once(app, http):
    async with app.run_test(size=(100, 30)) as pilot:
        await open_new_run(pilot)  # from Runs: the first ready trace
        await pilot.press("plus", "plus", "plus", "plus")
        await wait_for_text(pilot, "1 config, 5 sims in total  (you will be asked to confirm)")
        await pilot.press("enter")
        await wait_for_app(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        text = screen_text(app)
        assert "Launch 5 sims?" in text and "SM7_QV100" in text and "× 5" in text
        await pilot.press("n")
        await wait_for_app(pilot, lambda: isinstance(app.screen, NewRunScreen), "back to New run")
        assert (await http.get("/api/runs")).json() == []

        await pilot.press("enter")
        await wait_for_app(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.press("y")
        await wait_for_app(pilot, lambda: isinstance(app.screen, RunScreen), "the new run")
        runs = (await http.get("/api/runs")).json()
        assert len(runs) == 1 and sum(runs[0]["sim_counts"].values()) == 5


@pytest.mark.slow
async def test_cancel_asks_first_then_cancels(app, http):
    run = await create_run(http, [("SM7_QV100", 2)])
    async with app.run_test(size=(100, 30)) as pilot:
        await open_run_screen(pilot, run["id"])
        await pilot.press("x")
        await wait_for_app(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        assert "2 unfinished sims will be stopped" in screen_text(app)
        await pilot.press("n")
        await wait_for_app(pilot, lambda: isinstance(app.screen, RunScreen), "the run screen")
        assert (await http.get(f"/api/runs/{run['id']}")).json()["state"] == "active"

        await pilot.press("x")
        await wait_for_app(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.press("y")
        await wait_for_app(
            pilot, lambda: len(table_rows(app, "■ cancelled")) == 2, "both sims cancelled in the table"
        )
        assert (await http.get(f"/api/runs/{run['id']}")).json()["state"] == "cancelled"


@pytest.mark.slow
async def test_survives_a_server_restart_reconnecting_then_live(tmp_path):
    # A real `cascade serve` process, killed and started again on the same port and data dir;
    # its seeded sample run is the run on screen.
    from tests.conftest import free_port

    serve = await ServeProcess(tmp_path / "data", free_port()).start()
    try:
        async with httpx.AsyncClient(
            base_url=serve.url, timeout=30, headers={"Authorization": f"Bearer {serve.token}"}
        ) as api:
            sample = (await api.get("/api/runs")).json()[0]
        app = CascadeApp(tui_settings(serve.url, serve.token, tmp_path))
        async with app.run_test(size=(100, 30)) as pilot:
            await on_list(pilot, RunsScreen, [])
            await wait_for_text(pilot, sample["id"])
            await pilot.press("enter")
            # A finished run says no `● LIVE` (issue 32); its stream is live all the same.
            await wait_for_app(pilot, lambda: getattr(app.screen, "connection", "") == "live", "live")
            # The table is refreshed on its own timer, a moment after the header goes live.
            await wait_for_app(
                pilot, lambda: len(table_rows(app, "✔ succeeded")) == 3, "the sims table filled"
            )
            await serve.kill()
            text = await wait_for_text(pilot, "RECONNECTING")
            assert len(table_rows(app, "✔ succeeded")) == 3, text  # last data stays visible
            snapshots = app.screen.model.snapshots
            await serve.start()
            await wait_for_app(pilot, lambda: app.screen.connection == "live", "live again", timeout=60)
            assert "RECONNECTING" not in screen_text(app)
            assert app.screen.model.snapshots == snapshots + 1  # started again from a snapshot
            assert len(table_rows(app, "✔ succeeded")) == 3
    finally:
        await serve.kill()


@pytest.mark.parametrize(
    "token,expected",
    [
        ("wrong-token", "refused the token (401 Unauthorized)"),
        (None, "needs a token"),
    ],
)
async def test_wrong_or_missing_token_is_refused_with_a_clear_message(srv, tmp_path, token, expected):
    app = make_app(srv, tmp_path, token=token)
    async with app.run_test(size=(100, 30)) as pilot:
        text = await wait_for_flat_text(pilot, expected)
        assert "Wrong or missing token" in text
        assert "wrong-token" not in text  # never the token itself
        assert not isinstance(app.screen, RunsScreen)


async def test_unreachable_server_is_explained(tmp_path):
    from tests.conftest import free_port

    app = CascadeApp(tui_settings(f"http://127.0.0.1:{free_port()}", TOKEN, tmp_path))
    async with app.run_test(size=(100, 30)) as pilot:
        text = await wait_for_flat_text(pilot, "No Cascade server answers at")
        assert "Server not reachable" in text and "Start one with `cascade serve`" in text


@pytest.mark.slow
async def test_downloads_results_log_and_files(app, http, run, tmp_path):
    sim_id = run["sims"][0]["id"]
    sim = await play(http, sim_id, recorded_log("SM7_QV100")[:5000])
    await sim.put_file("kernel-stats.csv", b"kernel,cycles\n1,2\n")
    downloads = tmp_path / "downloads"
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await open_run_screen(pilot, run["id"])
        await pilot.press("d")
        results = downloads / f"{run['id']}-results.json"
        await wait_for_app(pilot, results.exists, "the results download")
        assert b'"comparison"' in results.read_bytes()
        # The toast names the file whole on its own line, then where it went.
        text = await wait_for_text(pilot, "Download saved")
        assert f" {run['id']}-results.json " in text, text  # never cut in the middle
        assert "▌ in " in text, text  # the directory on a line of its own

        await pilot.press("f")
        await wait_for_text(pilot, "kernel-stats.csv")
        options = app.screen.query_one("#files-list")
        assert options.has_focus  # `f` hands the keyboard to the list
        assert options.highlighted == 0  # Enter saves something at once (the run results)
        await pilot.press("tab")
        assert app.screen.query_one("SimTable").has_focus
        await pilot.press("tab")
        assert options.has_focus
        await wait_for_text(pilot, "▶ Enter saves the highlighted item")
        # Keys only: Down to the file, Enter saves it.
        for _ in range(options.option_count):
            highlighted = options.highlighted
            if (
                highlighted is not None
                and options.get_option_at_index(highlighted).id == "file:kernel-stats.csv"
            ):
                break
            await pilot.press("down")
        await pilot.press("enter")
        saved = downloads / sim_id / "kernel-stats.csv"
        await wait_for_app(pilot, saved.exists, "the file download")
        assert saved.read_bytes() == b"kernel,cycles\n1,2\n"
        await pilot.press("L")
        log_file = downloads / f"{sim_id}.log"
        await wait_for_app(pilot, log_file.exists, "the log download")
        assert len(log_file.read_text().splitlines()) == 5000


@pytest.mark.slow
async def test_every_key_has_an_id_in_footer_help_and_palette(app, run):
    async with app.run_test(size=(120, 40)) as pilot:
        run_screen = await open_run_screen(pilot, run["id"])
        for binding in RunScreen.BINDINGS:
            assert binding.id and binding.id.startswith("run."), binding
        await pilot.press("question_mark")
        await wait_for_app(pilot, lambda: isinstance(app.screen, HelpScreen), "the help screen")
        text = screen_text(app)
        assert "run.kernels" in text  # the screen's own keys first
        body = help_text(run_screen).plain  # the whole list, also what is below the fold
        for binding_id in ("run.kernels", "run.cancel", "run.search", "run.back", "app.help", "app.quit"):
            assert binding_id in body
        # Cascade's keys, and what the sims table's columns mean; not Textual's widget keys.
        await pilot.press("end")  # the column meanings are below the keys
        await pilot.pause()
        text = screen_text(app)
        assert "seconds since the sim's last heartbeat" in text
        assert "simulated instructions per second" in text
        assert "Scroll Left" not in text and "Page Left" not in text
        await pilot.press("escape")
        await wait_for_app(pilot, lambda: app.screen is run_screen, "help to close")
        commands = [c.title for c in app.get_system_commands(run_screen)]
        assert {"Kernels", "Cancel", "Search", "Save results", "Quit"} <= set(commands)
        assert len(commands) == len(set(commands)), commands  # nothing twice
        assert not {"Maximize", "Copy selected text", "Scroll Left"} & set(commands), commands
        # Run one from the palette: Ctrl+P, type, Enter.
        await pilot.press("ctrl+p")
        await pilot.press(*"Kernels")
        await wait_for_text(pilot, "run.kernels")
        await pilot.press("enter")
        await wait_for_text(pilot, "Total simulated time per config")
        assert app.screen is run_screen and run_screen.view == "kernels"
        footer = screen_text(app).splitlines()[-1]
        assert "Kernels" in footer and "Cancel" in footer
        assert "Back" in footer and "Quit" in footer and "Help" in footer


@pytest.mark.slow
async def test_a_sim_failing_and_the_run_finishing_are_notified(app, http, run):
    sim = Simulator(http, run["sims"][0]["id"])
    await sim.beat("running")
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await on_list(pilot, RunsScreen, [])
        await wait_for_text(pilot, run["id"])
        await pilot.press("enter")
        await wait_for_text(pilot, "▶ running")
        # Recorded before the beat: its notification may come before the next line of this test.
        messages = record_notifications(app)
        await sim.beat("failed", exit_code=139, error="segmentation fault (SIGSEGV)")
        await wait_for_app(
            pilot,
            lambda: any("SM7_QV100 #0 failed: segmentation fault" in m for m in messages()),
            "the failure notification",
        )
        await wait_for_app(
            pilot,
            lambda: any(f"{run['id']} finished: failed" in m for m in messages()),
            "the finished notification",
        )


@pytest.mark.slow
async def test_kernels_view_shows_real_time_and_mape_when_the_trace_has_real_timing(make_server, tmp_path):
    trace_id = "timed-trace"
    server = await serve(make_server)
    trace = ready_trace(trace_id)
    for kernel, name in zip(trace.kernels, recorded_kernel_names()):  # the kernels the sims run
        kernel.name = name
    # Real durations of 1 µs per kernel: every simulated time is measured against that.
    real = {"kernels": [{"kernel_id": i + 1, "duration_ns": 1000.0} for i in range(15)]}
    assert (await store_real_timing(server.store, trace, real)).has_real_timing
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 1)], trace_id)
        await play(http, run["sims"][0]["id"], recorded_log("SM7_QV100"))
        expected = (await http.get(f"/api/runs/{run['id']}/comparison")).json()
    sims = [row["sim_ns"]["SM7_QV100"] for row in expected["rows"]]
    mape = sum(abs(s - 1000.0) / 1000.0 * 100 for s in sims) / len(sims)
    app = make_app(server, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_run_screen(pilot, run["id"])
        await pilot.press("k")
        text = await wait_for_text(pilot, f"MAPE {mape:.1f}%")
        assert "  real " in text and "1 µs" in text
        assert "no real timing" not in text


async def test_run_screen_text_is_never_drawn_in_its_own_background_colour(app, run):
    """A mixin once changed how Textual resolved the screens' default CSS, and the header, the
    column titles and the log were painted in their background colour (invisible)."""
    async with app.run_test(size=(100, 30)) as pilot:
        await open_run_screen(pilot, run["id"])
        await wait_for_text(pilot, "LIVE")
        for selector in ("#run-header", "SimTable", "LogView"):
            widget = app.screen.query_one(selector)
            style = widget.rich_style
            assert style.color is not None and style.color != style.bgcolor, (selector, style)


@pytest.mark.slow
async def test_cancel_is_offered_while_a_run_is_active_only(app, http, run):
    async with app.run_test(size=(120, 40)) as pilot:
        run_screen = await open_run_screen(pilot, run["id"])
        await wait_for_text(pilot, "Cancel")  # in the footer, the run being active
        assert "run.cancel" in help_text(run_screen).plain
        sim_id = run["sims"][0]["id"]
        await play(http, sim_id, ["done"])
        # Both, together: under load the footer can be between two compositions (no `Cancel`
        # for a frame) while the run is still active.
        await wait_for_app(
            pilot,
            lambda: "Cancel" not in screen_text(app) and "run.cancel" not in help_text(run_screen).plain,
            "x to leave the footer and the help",
        )
        await pilot.press("x")  # nothing to cancel: no dialog
        await pilot.pause()
        assert app.screen is run_screen
        await pilot.press("escape")  # the runs list: the same for the finished run selected
        await on_list(pilot, RunsScreen, [])
        await wait_for_text(pilot, run["id"])
        assert "Cancel run" not in screen_text(app)


@pytest.mark.slow
async def test_new_run_shards_show_the_speed_up_and_error_and_launch_sharded(app, http):
    """Issue 23: `>` shards each sim; the form says the expected speed-up and the measured error,
    counts every shard as a sim, and the run screen's sims table shows each shard's range."""
    async with app.run_test(size=(120, 36)) as pilot:
        await open_new_run(pilot)
        assert "Shards per sim: 1" in screen_text(app)
        await pilot.press("greater_than_sign", "greater_than_sign")
        text = await wait_for_flat_text(pilot, "Shards per sim: 3")
        assert "expected speed-up ×" in text and "1.99%" in text and "total cycles +0.17%" in text, text
        assert "1 config, 3 sims in total (1 replica split into shards)" in text
        await pilot.press("less_than_sign")
        await wait_for_text(pilot, "1 config, 2 sims in total")
        await pilot.press("greater_than_sign", "enter")
        await on_run_screen(pilot)
        runs = (await http.get("/api/runs")).json()
        assert runs[0]["entries"] == [
            {"gpu_config": "SM7_QV100", "count": 1, "shards": 3, "warmup_kernels": 1}
        ]
        # Balanced by cost, warm-up included (this trace has no instruction counts: one each).
        text = await wait_for_text(pilot, "3/3 k12-15 +1w")
        assert "1/3 k1-6" in text and "2/3 k7-11 +1w" in text and "0/6" in text
