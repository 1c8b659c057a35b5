"""The big real_timing.json scenario (issue 32): 300,000 kernels, about 12 MB, read once when the
trace becomes ready and answered from stored rows. Shared by the test (what it answers) and
benchmarks/bench_real_timing.py (how long the server's loop waits meanwhile: figures, never
timed assertions)."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field

import httpx

from tests.conftest import LiveServer, ready_trace
from tests.helpers import create_run, recorded_kernel_names, recorded_log

KERNELS = 300_000


def big_real_timing(names: list[str], kernels: int = KERNELS) -> dict:
    """A real_timing.json of `kernels` kernels (about 12 MB at 300,000), the first named as the sims'."""
    return {
        "format": "cascade.real_timing/1",
        "kernels": [
            {
                "kernel_id": n + 1,
                "kernel_name": names[n] if n < len(names) else f"_Z6kernel{n}v",
                "duration_ns": 1000.0 + n % 977,
                "samples": 3,
            }
            for n in range(kernels)
        ],
    }


@dataclass
class Outcome:
    rows: int = 0
    fields: dict = field(default_factory=dict)
    loop_waits_s: list[float] = field(default_factory=list)  # while the file was read
    health_s: list[float] = field(default_factory=list)  # /api/health while the big requests ran
    comparison: httpx.Response | None = None
    accuracy: httpx.Response | None = None
    comparison_s: float = 0.0


async def _loop_waits_while(task: asyncio.Future) -> list[float]:
    waits = []
    while not task.done():
        started = time.monotonic()
        await asyncio.sleep(0.02)
        waits.append(time.monotonic() - started)
    return waits


async def run_scenario(server: LiveServer, kernels: int = KERNELS) -> Outcome:
    """Read the big file as the scanner does, store it, delete the file, then ask for a run's
    comparison and the accuracy while health checks run beside them."""
    from cascade_server.traces.ready_fields import ready_fields

    out = Outcome()
    names = recorded_kernel_names()
    trace = ready_trace("big", metadata=None)
    for kernel, name in zip(trace.kernels, names):
        kernel.name = name
    trace_dir = server.settings.traces_dir / "big"
    trace_dir.mkdir(parents=True)
    path = trace_dir / "real_timing.json"
    path.write_text(json.dumps(big_real_timing(names, kernels)))
    reading = asyncio.ensure_future(ready_fields(trace_dir, None, 120))
    out.loop_waits_s = await _loop_waits_while(reading)
    out.fields, rows = reading.result()
    out.rows = len(rows)
    trace = trace.model_copy(update={k: out.fields[k] for k in ("has_real_timing", "real_timing_error")})
    await server.store.traces.put_trace(trace, real_timing=rows)
    path.write_text("gone: every answer comes from the stored rows")

    async with server.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}], "big")
        sim = run["sims"][0]["id"]
        assert (await http.post(f"/api/sims/{sim}/heartbeat", json={"state": "running"})).status_code == 200
        posted = await http.post(f"/api/sims/{sim}/logs", json={"seq": 0, "lines": recorded_log("SM7_QV100")})
        assert posted.status_code == 204
        await http.post(f"/api/sims/{sim}/heartbeat", json={"state": "succeeded", "exit_code": 0})
        done = asyncio.Event()

        async def check_health() -> None:
            while not done.is_set():
                started = time.monotonic()
                assert (await http.get("/api/health")).status_code == 200
                out.health_s.append(time.monotonic() - started)
                await asyncio.sleep(0.05)

        async def big_requests() -> None:
            try:
                started = time.monotonic()
                out.comparison = await http.get(f"/api/runs/{run['id']}/comparison", timeout=120)
                out.comparison_s = time.monotonic() - started
                out.accuracy = await http.get("/api/accuracy", timeout=120)
            finally:
                done.set()

        await asyncio.gather(big_requests(), check_health())
    return out
