"""What reaches a worker's and a simulator's environment: the token reaches `cascade worker`
only, never `accel-sim.out` or the stand-in replay, and the server's unrelated variables reach
neither. Real server, real worker subprocesses, a fake `accel-sim.out` that writes down its own
environment and its worker's (read from /proc) as output files the worker uploads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cascade_server.launchers.local import is_worker_of
from tests.conftest import TOKEN, ready_trace
from tests.helpers import create_run, finished_run, get_run, wait_until
from tests.worker.fakes import install_fake_accelsim

pytestmark = pytest.mark.timeout(240)

SERVER_ONLY = {"UNRELATED_SECRET": "do-not-pass-me", "AWS_SECRET_ACCESS_KEY": "aws-secret-key"}


@pytest.fixture
def server_env(monkeypatch):
    """A server started with secrets of its own (and `worker_env`'s settings for its workers)."""
    for name, value in SERVER_ONLY.items():
        monkeypatch.setenv(name, value)


def environ_of(pid: int) -> dict[str, str]:
    items = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return {k: v for k, _, v in (item.decode().partition("=") for item in items if item)}


def assert_no_secret(env: dict[str, str], who: str) -> None:
    assert not set(SERVER_ONLY) & set(env), f"{who} got the server's own variables"
    assert not any(TOKEN in value for value in env.values()), f"{who} got the token"
    assert not [name for name in env if name.startswith("CASCADE_")], f"{who} got CASCADE_* variables"


async def test_accelsim_gets_no_token_and_the_worker_nothing_unrelated(local_server, server_env, tmp_path):
    fake = install_fake_accelsim(
        tmp_path / "accel-sim", {"SM7_ENV": {"fake_behaviour": "env", "fake_kernels": "1"}}
    )
    server = await local_server(
        ready_trace("env-trace", kernels=1), trace_dir=True, local_slots=1, accelsim_dir=fake
    )
    async with server.client() as http:
        run = await create_run(http, [("SM7_ENV", 1)], trace_id="env-trace")
        sim = (await finished_run(http, run["id"]))["sims"][0]
        assert sim["state"] == "succeeded", sim
        files = f"/api/sims/{sim['id']}/files"
        simulator = json.loads((await http.get(f"{files}/environ.json")).content)
        worker = json.loads((await http.get(f"{files}/worker-environ.json")).content)

    assert worker["CASCADE_TOKEN"] == TOKEN and worker["CASCADE_SIM_ID"] == sim["id"]
    assert worker["CASCADE_HEARTBEAT_INTERVAL_S"] == "0.5"  # a worker setting passes
    assert worker["PATH"]
    assert not set(SERVER_ONLY) & set(worker)
    assert_no_secret(simulator, "accel-sim.out")
    assert simulator["PATH"] == worker["PATH"]


async def test_the_replay_child_gets_no_token(local_server, server_env):
    server = await local_server(local_slots=1, replay_speed=0.5)
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 1)])
        sim_id = run["sims"][0]["id"]

        async def replay_child() -> int | None:
            sim = (await get_run(http, run["id"]))["sims"][0]
            if sim["state"] != "running" or not sim["launcher_ref"]:
                return None
            pid = int(sim["launcher_ref"])
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            return int(children[0]) if children else None

        try:
            child = await wait_until(replay_child, 60)
            worker = int((await get_run(http, run["id"]))["sims"][0]["launcher_ref"])
            assert is_worker_of(worker, sim_id)
            assert "cascade_worker.replay" in Path(f"/proc/{child}/cmdline").read_bytes().decode()
            assert_no_secret(environ_of(child), "the replay child")
            worker_env = environ_of(worker)
            assert worker_env["CASCADE_TOKEN"] == TOKEN and not set(SERVER_ONLY) & set(worker_env)
        finally:  # workers outlive the server: never leave this one running
            await http.post(f"/api/runs/{run['id']}/cancel")
            sim = (await get_run(http, run["id"]))["sims"][0]
            if sim["launcher_ref"]:
                await wait_until(lambda: _not_running(int(sim["launcher_ref"]), sim_id), 30)


async def _not_running(pid: int, sim_id: str) -> bool:
    return not is_worker_of(pid, sim_id)
