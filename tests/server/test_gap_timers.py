"""The gap timers and the runs of missing chunks (ingest/gaps.py), alone."""

from __future__ import annotations

import asyncio

import pytest

from cascade_server.ingest import gaps
from cascade_server.ingest.gaps import GapTimers, missing_runs


def test_the_runs_of_missing_chunks() -> None:
    assert missing_runs(0, [2, 3, 6]) == [(0, 1), (4, 5)]
    assert missing_runs(3, [4]) == [(3, 3)]
    assert missing_runs(2, [2, 3]) == []  # nothing missing before the last parked chunk
    assert missing_runs(2, []) == []


async def test_a_timer_closes_the_gap_it_was_set_for_and_only_the_latest_one_per_sim(monkeypatch) -> None:
    monkeypatch.setattr(gaps, "GAP_WAIT_S", 0.05)
    closed: list[tuple[str, int | None]] = []
    fired = asyncio.Event()

    async def close_gaps(sim_id: str, waiting_for: int | None) -> None:
        closed.append((sim_id, waiting_for))
        fired.set()

    timers = GapTimers(close_gaps)
    timers.watch("a", 1)
    timers.watch("a", 3)  # the gap at 1 filled: its timer goes
    timers.watch("b", 7)
    timers.unwatch("b")
    assert (timers.watched("a"), timers.watched("b")) == (3, None)
    await asyncio.wait_for(fired.wait(), 5)
    await asyncio.sleep(0.1)
    assert closed == [("a", 3)] and timers.watched("a") is None


async def test_watching_the_same_gap_again_keeps_its_time(monkeypatch) -> None:
    closed: list[tuple[str, int | None]] = []

    async def close_gaps(sim_id: str, waiting_for: int | None) -> None:
        closed.append((sim_id, waiting_for))

    loop = asyncio.get_running_loop()
    set_for: list[tuple[str, int | None]] = []
    call_later = loop.call_later

    def counted(delay, callback, *args):
        if args and isinstance(args[0], str):  # a gap's timer (sim_id, waiting_for), not a sleep
            set_for.append(args)
            delay = 0.01
        return call_later(delay, callback, *args)

    monkeypatch.setattr(loop, "call_later", counted)
    timers = GapTimers(close_gaps)
    timers.watch("a", None)  # a close that failed: whatever chunk the sim waits for
    timers.watch("a", None)  # not a new wait
    timers.watch("b", 4)
    timers.watch("b", 4)
    while len(closed) < 2:
        await asyncio.sleep(0.01)
    assert set_for == [("a", None), ("b", 4)] and sorted(closed, key=str) == [("a", None), ("b", 4)]


@pytest.mark.parametrize("fire_first", [False, True])
async def test_closing_stops_the_timers_and_the_closes_they_started(monkeypatch, fire_first: bool) -> None:
    monkeypatch.setattr(gaps, "GAP_WAIT_S", 0.01)
    started, finished = asyncio.Event(), []

    async def close_gaps(sim_id: str, waiting_for: int | None) -> None:
        started.set()
        await asyncio.sleep(10)
        finished.append(sim_id)

    timers = GapTimers(close_gaps)
    timers.watch("a", 1)
    if fire_first:
        await asyncio.wait_for(started.wait(), 5)
    timers.close()
    await asyncio.sleep(0.05)
    assert started.is_set() == fire_first and not finished and timers.watched("a") is None
