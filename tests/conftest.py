"""Shared fixtures: a real Cascade server on a real port, over a real SQLite file."""

from __future__ import annotations

import gzip
import os
import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
import pytest
from aiohttp import web

from cascade_server.app import create_app
from cascade_server.appkeys import STORE_KEY
from cascade_server.models import KernelLaunch, TraceDetail, utcnow
from cascade_server.runner import ApiRunner
from cascade_server.settings import Settings
from cascade_server.storage import Store

TOKEN = "test-token-0123456789"
# Real Accel-Sim logs (shared/samples-real/runs/<CONFIG>/run.log), shipped gzipped in the repo.
RECORDINGS = Path(__file__).resolve().parents[1] / "samples" / "recordings"


def recorded_log(config: str) -> bytes:
    """The complete stdout of a real Accel-Sim run on `config`, byte for byte."""
    return gzip.decompress((RECORDINGS / f"{config}.log.gz").read_bytes())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LiveServer:
    """The real app on 127.0.0.1:<port>, in this process; `restart()` keeps the data dir and port."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.settings.port}"

    @property
    def app(self) -> web.Application:
        assert self.runner is not None
        return self.runner.app

    @property
    def store(self) -> Store:
        return self.app[STORE_KEY]

    async def start(self) -> LiveServer:
        self.runner = ApiRunner(
            create_app(self.settings), handler_cancellation=True, access_log=None, shutdown_timeout=2
        )
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.settings.port).start()
        return self

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None

    async def restart(self) -> None:
        await self.stop()
        await self.start()

    def client(self, token: str | None = TOKEN, **kwargs) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        kwargs.setdefault("timeout", 30)
        return httpx.AsyncClient(base_url=self.url, headers=headers, **kwargs)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests configure the server explicitly; nothing leaks in from the shell."""
    for name in list(os.environ):
        if name.startswith("CASCADE_"):
            monkeypatch.delenv(name)


@pytest.fixture
def make_settings(tmp_path: Path) -> Callable[..., Settings]:
    def make(**overrides) -> Settings:
        values = dict(
            data_dir=tmp_path / "data", host="127.0.0.1", port=free_port(), token=TOKEN,
            launcher="manual", samples=False,
        )
        values.update(overrides)
        return Settings(**values)

    return make


@pytest.fixture
async def make_server(make_settings) -> AsyncIterator[Callable[..., LiveServer]]:
    servers: list[LiveServer] = []

    async def make(**overrides) -> LiveServer:
        server = await LiveServer(make_settings(**overrides)).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        await server.stop()


@pytest.fixture
async def server(make_server) -> LiveServer:
    return await make_server()


@pytest.fixture
async def client(server: LiveServer) -> AsyncIterator[httpx.AsyncClient]:
    async with server.client() as http:
        yield http


def ready_trace(trace_id: str = "tinyformer-step-sm70", arch: str = "sm_70", kernels: int = 15, **fields) -> TraceDetail:
    now = utcnow()
    values = dict(
        id=trace_id, state="ready", created_at=now, updated_at=now, trace_gpu_arch=arch,
        kernel_count=kernels, bytes=1234, metadata={"status": "ok"},
        kernels=[KernelLaunch(kernel_id=i + 1, name=f"_Z6kernel{i}v", grid=(1, 1, 1), block=(32, 1, 1))
                 for i in range(kernels)],
    )
    values.update(fields)
    return TraceDetail(**values)
