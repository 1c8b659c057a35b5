"""Issue 13, "Time", in the UI against a real server: the New run screen says how many sims start
now and how many wait, from the real launcher (local slots with a real worker busy, or manual),
and keeps saying it as counts change and slots free."""

from __future__ import annotations

import asyncio

import pytest

from .conftest import create_run, make_app, open_new_run, serve, tinyformer
from .helpers import screen_text, wait_for_app, wait_for_text


@pytest.fixture
def srv_traces():
    return [tinyformer()]


@pytest.mark.slow
async def test_new_run_says_how_many_start_now_as_counts_change_and_slots_free(
    make_server, tmp_path, monkeypatch
):
    monkeypatch.setenv("CASCADE_HEARTBEAT_INTERVAL_S", "0.5")
    # Two slots, one taken by a real stand-in worker slowed right down.
    server = await serve(make_server, [tinyformer()], launcher="local", local_slots=2, replay_speed=0.01)
    async with server.client() as http:
        busy = await create_run(http, [("SM7_TITANV", 1)])

        async def one_busy() -> bool:
            return (await http.get("/api/launcher")).json()["running"] == 1

        for _ in range(600):  # the worker starts in the background after the 201
            if await one_busy():
                break
            await asyncio.sleep(0.1)
        assert await one_busy()
        app = make_app(server, tmp_path)
        async with app.run_test(size=(80, 24)) as pilot:
            await open_new_run(pilot)
            await wait_for_text(pilot, "the sim starts now (2 slots, 1 busy)")
            await pilot.press("plus")
            await wait_for_text(pilot, "1 start now, 1 wait for a slot (2 slots, 1 busy)")
            await pilot.press("plus", "plus")
            text = await wait_for_text(pilot, "1 start now, 3 wait for a slot (2 slots, 1 busy)")
            assert "1 config, 4 sims in total" in text
            # The busy slot frees: the line follows without a key.
            await http.post(f"/api/runs/{busy['id']}/cancel")
            await wait_for_text(pilot, "2 start now, 2 wait for a slot (2 slots, 0 busy)", timeout=60)
            await pilot.press("space")  # unpick the only config
            await wait_for_app(pilot, lambda: "start now" not in screen_text(app), "the line to go")


async def test_new_run_on_the_manual_launcher_says_the_sims_wait_for_you(app):  # srv: the manual launcher
    async with app.run_test(size=(80, 24)) as pilot:
        await open_new_run(pilot)
        await wait_for_text(pilot, "the sim waits for you to start it with cascade worker (manual launcher)")
        await pilot.press("plus")
        await wait_for_text(pilot, "all 2 wait for you to start them")
