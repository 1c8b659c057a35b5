"""What a launcher saw is recorded even when a full disk refuses it at first: the record is tried
again until space returns (a started sim otherwise stayed `pending` with its log refused, an ended
one `running` until the heartbeat monitor called it lost)."""

from __future__ import annotations

import errno
import logging
import sqlite3

import pytest

from cascade_server.launchers import base


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "RECORD_RETRY_S", 0.01)


def refused(times: int, error: Exception):
    calls: list[int] = []

    async def call() -> None:
        calls.append(1)
        if len(calls) <= times:
            raise error

    return call, calls


@pytest.mark.parametrize(
    "full",
    [OSError(errno.ENOSPC, "No space left on device"), sqlite3.OperationalError("database or disk is full")],
)
async def test_a_record_a_full_disk_refuses_is_tried_until_it_is_stored(full, caplog):
    if isinstance(full, sqlite3.OperationalError):
        full.sqlite_errorcode = sqlite3.SQLITE_FULL
    caplog.set_level(logging.WARNING)
    call, calls = refused(3, full)
    await base.record("sim s: recording the launch", call)
    assert len(calls) == 4
    waits = [r for r in caplog.records if "waits for disk space" in r.getMessage()]
    assert len(waits) == 1 and not waits[0].exc_info  # said once, without a traceback


async def test_any_other_failure_is_logged_once_and_not_retried(caplog):
    call, calls = refused(5, RuntimeError("the sim is gone"))
    await base.record("sim s: recording the exit", call)
    assert len(calls) == 1
    assert [r.getMessage() for r in caplog.records if r.exc_info] == ["sim s: recording the exit failed"]
