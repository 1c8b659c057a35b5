"""The New run screen's line about where the sims go (`capacity.start_plan`, pure)."""

from __future__ import annotations

import pytest

from cascade_core.models import LauncherStatus
from cascade_tui.views.capacity import start_plan


def local(slots: int, running: int = 0, queued: int = 0) -> LauncherStatus:
    return LauncherStatus(name="local", slots=slots, running=running, queued=queued)


@pytest.mark.parametrize(
    ("status", "sims", "text"),
    [
        (local(4, running=1), 8, "3 start now, 5 wait for a slot (4 slots, 1 busy)"),
        (local(4, running=1), 3, "all 3 start now (4 slots, 1 busy)"),
        (local(4), 1, "the sim starts now (4 slots, 0 busy)"),
        (local(1), 2, "1 start now, 1 wait for a slot (1 slot, 0 busy)"),
        # sims already waiting take the next free slots before this run's
        (local(4, running=4, queued=2), 5, "all 5 wait for a slot (4 slots, 4 busy, 2 queued)"),
        (local(4, running=1, queued=1), 4, "2 start now, 2 wait for a slot (4 slots, 1 busy, 1 queued)"),
        (
            LauncherStatus(name="manual"),
            1,
            "the sim waits for you to start it with cascade worker (manual launcher)",
        ),
        (
            LauncherStatus(name="manual"),
            2,
            "all 2 wait for you to start them with cascade worker (manual launcher)",
        ),
        (
            LauncherStatus(name="slurm", partition="gpu", running=3, queued=1),
            6,
            "all 6 go to Slurm's queue, partition gpu (Cascade's jobs there: 3 running, 1 waiting)",
        ),
        (
            LauncherStatus(name="slurm"),
            1,
            "the sim goes to Slurm's queue, the default partition (Cascade's jobs there: 0 running, 0 waiting)",
        ),
    ],
)
def test_start_plan_says_how_many_start_now_and_where_the_others_wait(status, sims, text):
    assert start_plan(status, sims) == text


def test_nothing_to_say_without_sims_or_a_launcher_report():
    assert start_plan(local(4), 0) == ""
    assert start_plan(None, 3) == ""
