"""The end-to-end tier's factories, after datasette's `make_app_client`: one way to start
`cascade serve` as a real process, one to have the in-process server run real `cascade worker`
processes, one to start `cascade worker` by hand, one data directory a server left behind. The run API the tests then drive (creating
runs, waiting for states) is tests/helpers.py's. The Slurm tier uses the same
(tests/slurm/conftest.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import IO

import pytest

from cascade_core.models import TraceDetail
from cascade_server.events import Broker
from cascade_server.storage import Store
from tests.conftest import TOKEN, LiveServer, ready_trace
from tests.helpers import ServeProcess
from tests.worker.fakes import make_trace_dir

# What an end-to-end `cascade serve` runs with unless a test says otherwise: the tests' token,
# quick heartbeats (its workers inherit them), no sample data.
SERVE_ENV = {"CASCADE_TOKEN": TOKEN, "CASCADE_HEARTBEAT_INTERVAL_S": "0.5", "CASCADE_SAMPLES": "0"}
# The local launcher with 2 slots, replaying at 6x: a run of 15 kernels is midway for seconds.
LOCAL_LAUNCHER = {"CASCADE_LAUNCHER": "local", "CASCADE_LOCAL_SLOTS": "2", "CASCADE_REPLAY_SPEED": "6"}


@pytest.fixture
async def start_serve(tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[ServeProcess]]]:
    """`start_serve(data_dir=tmp_path/"data", log=tmp_path/"serve.log", **env)`: `cascade serve`
    as a process (SERVE_ENV, then `env`), once it serves. Every one started is stopped at the
    end; one that was killed starts again on the same port with `await serve.start()`."""
    started: list[ServeProcess] = []

    async def start(data_dir: Path | None = None, *, log: Path | None = None, **env: str) -> ServeProcess:
        serve = ServeProcess(
            data_dir or tmp_path / "data", env={**SERVE_ENV, **env}, log=log or tmp_path / "serve.log"
        )
        started.append(serve)
        return await serve.start()

    yield start
    unstopped = []
    for serve in started:  # each one, even after one that would not stop
        try:
            await serve.stop()
        except AssertionError as exc:
            unstopped.append(str(exc))
    assert not unstopped, unstopped


@pytest.fixture
async def seeded_data_dir(tmp_path: Path) -> Path:
    """tmp_path/"data" as a stopped server left it, its database holding the ready trace."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    store = await Store(data_dir / "cascade.db", Broker()).open()
    await store.traces.put_trace(ready_trace())
    await store.close()
    return data_dir


@pytest.fixture
def local_server(make_server, worker_env) -> Callable[..., Awaitable[LiveServer]]:
    """`local_server(trace=ready_trace(), trace_dir=False, **settings)`: the in-process server
    on the local launcher (real `cascade worker` subprocesses, with `worker_env`), holding
    `trace`; with `trace_dir`, the trace's directory too, for a (fake) `accel-sim.out` to read."""

    async def make(trace: TraceDetail | None = None, *, trace_dir: bool = False, **settings) -> LiveServer:
        server = await make_server(launcher="local", **settings)
        trace = trace or ready_trace()
        await server.store.traces.put_trace(trace)
        if trace_dir:
            make_trace_dir(server.settings.traces_dir / trace.id)
        return server

    return make


@pytest.fixture
def start_worker() -> Iterator[Callable[..., subprocess.Popen]]:
    """`start_worker(server=None, env=None, stdout=PIPE, **options)`: `cascade worker` by hand,
    each option a flag (`sim_id="sim-1"`: `--sim-id sim-1`), for `server` (its URL and the
    tests' token) unless the options say otherwise, with quick heartbeats and a short kill grace,
    in a session of its own; one still running at the end is killed."""
    started: list[subprocess.Popen] = []

    def start(
        server: LiveServer | None = None,
        *,
        env: dict[str, str] | None = None,
        stdout: int | IO = subprocess.PIPE,
        **options: str,
    ) -> subprocess.Popen:
        if server is not None:
            options = {"url": server.url, "token": TOKEN, **options}
        flags = [part for name, value in options.items() for part in (f"--{name.replace('_', '-')}", value)]
        proc = subprocess.Popen(
            [sys.executable, "-m", "cascade_worker", *flags],
            env={
                **os.environ,
                "CASCADE_HEARTBEAT_INTERVAL_S": "0.3",
                "CASCADE_KILL_GRACE_S": "3",
                **(env or {}),
            },
            stdout=stdout,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
