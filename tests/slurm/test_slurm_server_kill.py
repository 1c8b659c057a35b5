"""`cascade serve` on the slurm launcher killed with SIGKILL mid-run and started again: the jobs
are untouched, the new server finds them by job id, and the run finishes with no line lost."""

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
from cascade_server.storage import Store
from tests.conftest import TOKEN, free_port, ready_trace
from tests.e2e.test_local_runs import create_run, finished_run, get_run, poll, recording
from tests.slurm.conftest import squeue_ids

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("slurm_cluster")]


async def start_serve(data_dir: Path, port: int, log_path: Path, s3_port: int) -> subprocess.Popen:
    env = {
        **os.environ, "CASCADE_S3_PORT": str(s3_port), "CASCADE_TOKEN": TOKEN, "CASCADE_SAMPLES": "0",
        "CASCADE_LAUNCHER": "slurm", "CASCADE_SLURM_LOCAL": "1", "CASCADE_SLURM_POLL_S": "1",
        "CASCADE_REPLAY_SPEED": "6", "CASCADE_HEARTBEAT_INTERVAL_S": "0.5",
    }
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cascade_server.cli", "serve", "--port", str(port), "--data-dir", str(data_dir)],
            env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )

    async def healthy():
        assert proc.poll() is None, log_path.read_text()
        try:
            async with httpx.AsyncClient() as http:
                return (await http.get(f"http://127.0.0.1:{port}/api/health")).status_code == 200
        except httpx.TransportError:
            return False

    await poll(healthy, 30)
    return proc


async def test_kill_9_the_server_mid_run_and_a_new_one_finishes_it(tmp_path):
    data_dir, port, s3_port = tmp_path / "data", free_port(), free_port()
    data_dir.mkdir()
    store = await Store(data_dir / "cascade.db", Broker()).open()
    await store.put_trace(ready_trace())
    await store.close()
    log_path = tmp_path / "serve.log"
    server = await start_serve(data_dir, port, log_path, s3_port)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=30) as http:
            run = await create_run(http, [("SM7_TITANV", 1), ("SM7_QV100", 2)])

            async def midway():
                sims = (await get_run(http, run["id"]))["sims"]
                return sims if all(s["state"] == "running" and 0 < s["kernels_done"] < 15 for s in sims) else None

            sims = await poll(midway, 90)
        server.send_signal(signal.SIGKILL)
        server.wait()
        refs = {s["id"]: s["launcher_ref"] for s in sims}
        assert set(refs.values()) <= squeue_ids()  # the jobs go on without a server
        await asyncio.sleep(2)  # the outage: workers spool their output meanwhile
        server = await start_serve(data_dir, port, log_path, s3_port)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=30) as http:
            final = await finished_run(http, run["id"], timeout=180)
            assert final["state"] == "succeeded", final
            for sim in final["sims"]:
                assert sim["launcher_ref"] == refs[sim["id"]]  # the same jobs, not new ones
                assert sim["kernels_done"] == 15
                assert (await http.get(f"/api/sims/{sim['id']}/log")).content == recording(sim["gpu_config"])
        assert log_path.read_text().count("Slurm job array") == 2  # sbatch ran once per entry, before the kill
    finally:
        server.terminate()
        server.wait(timeout=30)
