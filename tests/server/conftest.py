"""Fixtures of the server tests."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from cascade_core.s3_endpoint import S3Info
from cascade_server.storage import Store
from tests.conftest import LiveServer, ready_trace
from tests.helpers import own_endpoint, s3_answers, start_rclone, wait_until

from .harness import Harness


@pytest.fixture
async def core(make_server, accelsim_dir):
    server = await make_server(accelsim_dir=accelsim_dir)
    await server.store.traces.put_trace(ready_trace())
    await server.store.traces.put_trace(ready_trace("turing", arch="sm_75", kernels=3))
    return server


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    """A store of its own (no server), holding the ready trace."""
    store = await Store(tmp_path / "cascade.db").open()
    await store.traces.put_trace(ready_trace())
    yield store
    await store.close()


@pytest.fixture
async def harness(rclone_s3, tmp_path: Path) -> AsyncIterator[Harness]:
    """A trace scanner and its store over a bucket of its own on the session's `rclone_s3`."""
    h = await Harness(rclone_s3, tmp_path).start()
    yield h
    await h.stop()


@dataclass
class OwnEndpoint:
    """An S3 endpoint of the test's own (`rclone serve s3`), to kill, stop and start again."""

    info: S3Info
    port: int
    root: Path
    proc: subprocess.Popen | None = None

    async def start(self) -> None:
        """Start it (again, on the same port with the same credentials) and wait until it answers."""
        self.proc = start_rclone(self.port, self.root, self.info)
        await wait_until(lambda: s3_answers(self.info))


@pytest.fixture
async def endpoint_server(
    make_server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Callable[[int], Awaitable[tuple[LiveServer, OwnEndpoint]]]]:
    """`endpoint_server(n)`: an S3 endpoint of the test's own (credentials number `n`), answering,
    and a server whose scanner lists it every 0.1 s. The endpoint ends with the test."""
    endpoints: list[OwnEndpoint] = []

    async def make(n: int) -> tuple[LiveServer, OwnEndpoint]:
        info, port = own_endpoint(tmp_path, monkeypatch, n)
        endpoint = OwnEndpoint(info, port, tmp_path / "s3")
        endpoints.append(endpoint)
        await endpoint.start()
        server = await make_server(s3_endpoint=info.endpoint, s3_bucket="cascade", scan_interval_s=0.1)
        return server, endpoint

    yield make
    for endpoint in endpoints:
        if endpoint.proc is not None:
            endpoint.proc.send_signal(signal.SIGCONT)  # a stopped endpoint dies of SIGKILL all the same
            endpoint.proc.kill()
            endpoint.proc.wait()
