"""`cascade serve` killed with SIGKILL mid-run and started again: the local workers outlive it,
spool their output while it is gone, and finish the run with every line delivered."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from cascade_server.events import Broker
from cascade_server.launchers.local import is_worker_of
from cascade_server.storage import Store
from tests.conftest import TOKEN, ready_trace
from tests.e2e.test_local_runs import create_run, finished_run, get_run, recording
from tests.helpers import free_port, wait_until

pytestmark = pytest.mark.timeout(240)


async def start_serve(
    data_dir: Path, port: int, log_path: Path, s3_port: int, **settings: str
) -> subprocess.Popen:
    """`cascade serve` as a process (local launcher, 2 slots unless `settings` say otherwise)."""
    env = {
        **os.environ,
        "CASCADE_S3_PORT": str(s3_port),
        "CASCADE_TOKEN": TOKEN,
        "CASCADE_LAUNCHER": "local",
        "CASCADE_LOCAL_SLOTS": "2",
        "CASCADE_REPLAY_SPEED": "6",
        "CASCADE_SAMPLES": "0",
        "CASCADE_HEARTBEAT_INTERVAL_S": "0.5",
        **settings,
    }
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cascade_tui.cli",
                "serve",
                "--port",
                str(port),
                "--data-dir",
                str(data_dir),
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )

    async def healthy():
        assert proc.poll() is None, log_path.read_text()
        try:
            async with httpx.AsyncClient() as http:
                return (await http.get(f"http://127.0.0.1:{port}/api/health")).status_code == 200
        except httpx.TransportError:
            return False

    await wait_until(healthy, 30)
    return proc


async def test_kill_9_the_server_mid_run(tmp_path):
    data_dir, port, s3_port = tmp_path / "data", free_port(), free_port()
    data_dir.mkdir()
    store = await Store(data_dir / "cascade.db", Broker()).open()
    await store.traces.put_trace(ready_trace())
    await store.close()
    server = await start_serve(data_dir, port, tmp_path / "serve.log", s3_port)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    try:
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=30
        ) as http:
            run = await create_run(http, [("SM7_TITANV", 1), ("SM7_QV100", 1)])

            async def midway():
                sims = (await get_run(http, run["id"]))["sims"]
                return (
                    sims
                    if all(s["state"] == "running" and 0 < s["kernels_done"] < 15 for s in sims)
                    else None
                )

            sims = await wait_until(midway, 60)
        server.send_signal(signal.SIGKILL)
        server.wait()
        await asyncio.sleep(2)  # the outage
        for sim in sims:
            assert is_worker_of(int(sim["launcher_ref"]), sim["id"])
        server = await start_serve(data_dir, port, tmp_path / "serve.log", s3_port)
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=30
        ) as http:
            final = await finished_run(http, run["id"])
            assert final["state"] == "succeeded", final
            for sim in final["sims"]:
                assert sim["kernels_done"] == 15
                assert (await http.get(f"/api/sims/{sim['id']}/log")).content == recording(sim["gpu_config"])
    finally:
        server.terminate()
        server.wait(timeout=30)
