"""Issue 32: a trace's real_timing.json is read once, when the trace becomes ready (the real
scanner over a real `rclone serve s3`, a real SQLite store), and stored as rows; a file that gives
no real timing says why and leaves `has_real_timing` false. A trace made ready before the rows
were kept gets them when the server starts."""

from __future__ import annotations

import json

from tests.helpers import wait_until

from .harness import Harness, sample_files

TIMED = {"kernels": [{"kernel_id": n, "duration_ns": 1000.0 * n} for n in range(1, 16)]}


async def test_real_timing_is_stored_when_the_trace_becomes_ready(harness: Harness):
    harness.put_trace("timed", {**sample_files(), "real_timing.json": json.dumps(TIMED).encode()})
    ready = await harness.recorder.wait_state("timed", "ready", "failed")
    assert (ready.state, ready.has_real_timing, ready.real_timing_error) == ("ready", True, None)
    stored = await harness.store.traces.real_timing("timed")
    # Unnamed rows are named after the trace's kernel of their id.
    assert stored == [(kernel.name, 1000.0 * kernel.kernel_id) for kernel in ready.kernels]
    # Read once: what is on disk later changes nothing.
    (harness.mirror("timed") / "real_timing.json").write_text("[]")
    assert await harness.store.traces.real_timing("timed") == stored


async def test_a_real_timing_that_is_not_json_gives_none_and_says_why(harness: Harness):
    harness.put_trace("broken", {**sample_files(), "real_timing.json": b"kernel,ns\ngemm,7000\n"})
    ready = await harness.recorder.wait_state("broken", "ready", "failed")
    assert (ready.state, ready.has_real_timing) == ("ready", False)
    assert (ready.real_timing_error or "").startswith("real_timing.json is not JSON: ")
    assert await harness.store.traces.real_timing("broken") == []


async def test_a_trace_ready_before_rows_were_kept_gets_them_at_startup(harness: Harness):
    harness.put_trace("older", {**sample_files(), "real_timing.json": json.dumps(TIMED).encode()})
    ready = await harness.recorder.wait_state("older", "ready")
    # As a database from before migration 10 has it: ready, has_real_timing, no rows.
    await harness.store.traces.put_trace(ready, real_timing=[])
    assert await harness.store.traces.real_timing("older") == []
    await harness.restart()

    async def refilled() -> bool:
        return bool(await harness.store.traces.real_timing("older"))

    await wait_until(refilled, 60, what="the real timing read again")
    assert len(await harness.store.traces.real_timing("older")) == 15
    refilled_trace = await harness.store.traces.get_trace("older")
    assert refilled_trace is not None and refilled_trace.has_real_timing
