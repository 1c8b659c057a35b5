"""The simulator screen against a real server: `A` (or its command palette entry) says which
simulator runs; on the stand-in, `i` runs `cascade simulator install` with its output in the
screen, and the server then reports the real build."""

from __future__ import annotations

import re

import pytest

from cascade_tui.screens.simulator import SimulatorScreen
from tests.accelsim_build import extra_configs_dir, finished_prefix, source_tarballs

from .conftest import make_app
from .helpers import screen_text, wait_for_app, wait_for_text


async def open_simulator_screen(pilot) -> str:
    """`A` from the Runs list: the simulator screen's text once it says the stand-in runs."""
    await wait_for_text(pilot, "Runs")
    await pilot.press("A")
    await wait_for_app(pilot, lambda: isinstance(pilot.app.screen, SimulatorScreen), "the simulator screen")
    return await wait_for_text(pilot, "Sims run the stand-in")


async def test_the_stand_in_says_how_to_get_the_real_simulator(make_server, tmp_path):
    server = await make_server()
    app = make_app(server, tmp_path)
    async with app.run_test(size=(110, 30)) as pilot:
        text = await open_simulator_screen(pilot)
        assert "Press i to build the real Accel-Sim here" in text
        commands = [c.title for c in app.get_system_commands(app.screen)]
        assert "Install real Accel-Sim" in commands
        await pilot.press("escape")
        await wait_for_app(pilot, lambda: not isinstance(app.screen, SimulatorScreen), "back")
        commands = [c.title for c in app.get_system_commands(app.screen)]
        assert "Accel-Sim simulator: status and install" in commands


@pytest.mark.accelsim
@pytest.mark.timeout(300)
async def test_i_installs_the_real_simulator_for_the_servers_data_dir(make_server, tmp_path, monkeypatch):
    prefix = finished_prefix()
    framework, gpgpu_sim = source_tarballs()
    server = await make_server()
    # What `cascade up` sets for the UI it opens, and the sources of a machine without GitHub.
    monkeypatch.setenv("CASCADE_DATA_DIR", str(server.settings.data_dir))
    monkeypatch.setenv("CASCADE_SIMULATOR_PREFIX", str(prefix))
    monkeypatch.setenv("CASCADE_SIMULATOR_FRAMEWORK", str(framework))
    monkeypatch.setenv("CASCADE_SIMULATOR_GPGPU_SIM", str(gpgpu_sim))
    monkeypatch.setenv("CASCADE_SIMULATOR_CONFIGS", str(extra_configs_dir()))  # the A100's, offline
    app = make_app(server, tmp_path)
    async with app.run_test(size=(110, 30)) as pilot:
        await open_simulator_screen(pilot)
        await pilot.press("i")
        await wait_for_text(pilot, "Installed: the next run simulates for real.", timeout=120)
        text = await wait_for_text(
            pilot, "Sims run real Accel-Sim, installed by `cascade simulator install`."
        )
        # The status table pads its columns to the width: any run of spaces between the words.
        assert re.search(r"smoke run\s+passed", text) and re.search(r"smoke run\s+passed", screen_text(app))
        assert isinstance(app.screen, SimulatorScreen) and app.screen.outcome == "installed"


async def test_at_80_columns_the_stand_in_text_wraps_whole_and_x_shows_only_during_a_build(
    make_server, tmp_path
):
    server = await make_server()
    app = make_app(server, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        text = await open_simulator_screen(pilot)
        lines = [line.strip() for line in text.splitlines()]
        # Paragraphs wrapped by the screen, never a sentence broken before its line ends.
        assert "describe" not in lines and "CUDA needed)," not in lines, text
        assert "i Install real Accel-Sim" in lines[-1] and "Stop the build" not in lines[-1]


async def test_a_failed_build_says_why_in_lines_that_wrap_at_80_columns(make_server, tmp_path, monkeypatch):
    server = await make_server()
    missing = tmp_path / "nowhere" / "accel-sim-framework-0000000000000000000000000000000000000000.tar.gz"
    monkeypatch.setenv("CASCADE_DATA_DIR", str(server.settings.data_dir))
    monkeypatch.setenv("CASCADE_SIMULATOR_PREFIX", str(tmp_path / "prefix"))
    monkeypatch.setenv("CASCADE_SIMULATOR_FRAMEWORK", str(missing))
    app = make_app(server, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_simulator_screen(pilot)
        await pilot.press("i")
        await wait_for_app(pilot, lambda: app.screen.outcome == "failed", "the build to fail", timeout=120)
        await pilot.pause()
        text = " ".join(screen_text(app).split())
        assert "The build failed: the end of its output, below, says why" in text
        # The reason whole on screen, wrapped, not cut at the pane's edge.
        assert str(missing) in text.replace(" ", "") or missing.name in text.replace(" ", ""), text
        assert "build log:" not in text  # no log was written: none is named
