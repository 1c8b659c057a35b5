"""A server frozen (SIGSTOP) past the heartbeat timeout does not mark every sim `lost` when it
runs again: the monitor counts only silence the server was there to hear."""

from __future__ import annotations

import asyncio
import signal
from datetime import UTC, datetime, timedelta

import pytest

from cascade_server.monitor import AwakeClock
from tests.helpers import create_run, sim_states, sims_when, wait_until

pytestmark = pytest.mark.timeout(180)
TIMEOUT_S = 2.0


def test_awake_clock_resets_after_a_gap_only() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    clock = AwakeClock(0.5, monotonic=100.0, wall=start)
    later = start + timedelta(seconds=1)
    assert clock.tick(100.5, later) == start  # on time
    assert clock.tick(101.9, later) == start  # 0.9 s late: a busy server, not a gap
    resumed = start + timedelta(seconds=30)
    assert clock.tick(130.0, resumed) == resumed  # 27.6 s late: the server was not running
    assert clock.tick(130.5, resumed + timedelta(seconds=1)) == resumed


async def test_a_frozen_server_does_not_lose_every_sim_on_resume(seeded_data_dir, start_serve):
    server = await start_serve(seeded_data_dir, CASCADE_HEARTBEAT_TIMEOUT_S=str(TIMEOUT_S))
    try:
        async with server.client(timeout=60) as http:
            run = await create_run(http, [("SM7_QV100", 2)])
            beating, silent = (s["id"] for s in run["sims"])
            async with sim_states(http, run["id"]) as states:
                for sim_id in (beating, silent):
                    resp = await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "running"})
                    assert resp.json() == {"state": "running", "cancel": False}
                await wait_until(lambda: all(states[s][-1:] == ["running"] for s in (beating, silent)), 30)
                server.send_signal(signal.SIGSTOP)
                await asyncio.sleep(3 * TIMEOUT_S)  # frozen well past the timeout
                resumed_at = datetime.now(UTC)
                server.send_signal(signal.SIGCONT)

                async def keep_beating():
                    while True:
                        await http.post(f"/api/sims/{beating}/heartbeat", json={"state": "running"})
                        await asyncio.sleep(TIMEOUT_S / 4)

                beater = asyncio.create_task(keep_beating())
                try:
                    # The silent sim still goes lost: a full timeout after the server resumed.
                    listed = await sims_when(
                        http,
                        run["id"],
                        lambda sims: any(s["id"] == silent and s["state"] == "lost" for s in sims),
                    )
                    sims = {s["id"]: s for s in listed}
                finally:
                    beater.cancel()
        assert sims[beating]["state"] == "running"
        assert "lost" not in states[beating], states[beating]
        assert "running" in states[silent] and states[silent][-1] == "lost"
        # Its silence is counted from the resume, not from its last heartbeat before the freeze.
        assert datetime.fromisoformat(sims[silent]["last_heartbeat_at"]) < resumed_at
        lost_since = await _state_since(seeded_data_dir, silent)
        assert lost_since >= resumed_at - timedelta(seconds=1), (lost_since, resumed_at)
    finally:
        server.send_signal(signal.SIGCONT)  # a stopped server would never stop


async def _state_since(data_dir, sim_id: str) -> datetime:
    """When the sim's silence started, as the monitor counted it (the sims row's state_since)."""
    import sqlite3

    with sqlite3.connect(f"file:{data_dir / 'cascade.db'}?mode=ro", uri=True) as db:
        (value,) = db.execute("SELECT state_since FROM sims WHERE id=?", (sim_id,)).fetchone()
    return datetime.fromisoformat(value)
