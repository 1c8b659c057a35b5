"""Shared fixtures: a real Cascade server on a real port, over a real SQLite file."""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from aiohttp import web
from botocore.config import Config

from cascade_core.models import KernelLaunch, SimState, SimSummary, TraceDetail, utcnow
from cascade_core.s3_endpoint import S3Info
from cascade_server.api.http_site import ApiRunner
from cascade_server.app import create_app
from cascade_server.appkeys import INGEST_KEY, STORE_KEY
from cascade_server.clock import Clock
from cascade_server.ingest.log_ingest import LogIngest
from cascade_server.settings import Settings
from cascade_server.storage import Store
from tests.helpers import free_port, reserve_port, start_rclone, take_reserved

TOKEN = "test-token-0123456789"


class LiveServer:
    """The real app on 127.0.0.1:<port>, in this process; `restart()` keeps the data dir and port."""

    def __init__(self, settings: Settings, clock: Clock | None = None) -> None:
        self.settings = settings
        self.clock = clock
        self.runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.settings.port}"

    @property
    def app(self) -> web.Application:
        assert self.runner is not None
        return self.runner.app

    @property
    def ingest(self) -> LogIngest:
        return self.app[INGEST_KEY]

    @property
    def store(self) -> Store:
        return self.app[STORE_KEY]

    async def start(self) -> LiveServer:
        self.runner = ApiRunner(
            create_app(self.settings, self.clock),
            handler_cancellation=True,
            access_log=None,
            shutdown_timeout=2,
        )
        await self.runner.setup()
        sock = take_reserved(self.settings.port)  # the first start: the socket the OS bound for it
        site = (
            web.SockSite(self.runner, sock)
            if sock
            else web.TCPSite(self.runner, "127.0.0.1", self.settings.port)
        )
        await site.start()
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


@pytest.fixture(scope="session", autouse=True)
def no_worker_outlives_the_tests(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Workers outlive their server by design (they report to the next one), so a test that stops
    its server with a sim running leaves its worker retrying for hours: at the end, every
    `cascade_worker` whose sim is this session's (its environment names this session's temporary
    folder) is stopped."""
    yield
    root = str(tmp_path_factory.getbasetemp()).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if (
                b"cascade_worker" in (entry / "cmdline").read_bytes()
                and root in (entry / "environ").read_bytes()
            ):
                os.kill(int(entry.name), signal.SIGKILL)
        except OSError:  # gone meanwhile, or not ours to read
            continue


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests configure the server explicitly; nothing leaks in from the shell."""
    for name in list(os.environ):
        if name.startswith("CASCADE_"):
            monkeypatch.delenv(name)


@pytest.fixture
def worker_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers inherit the server's environment (a launcher passes it on): quick heartbeats and a
    short kill grace."""
    monkeypatch.setenv("CASCADE_HEARTBEAT_INTERVAL_S", "0.5")
    monkeypatch.setenv("CASCADE_KILL_GRACE_S", "3")


@pytest.fixture
def make_settings(tmp_path: Path) -> Callable[..., Settings]:
    def make(**overrides: Any) -> Settings:
        values: dict[str, Any] = dict(
            data_dir=tmp_path / "data",
            host="127.0.0.1",
            port=reserve_port(),
            token=TOKEN,
            launcher="manual",
            samples=False,
        )
        values.update(overrides)
        return Settings(**values)

    return make


@pytest.fixture
async def make_server(make_settings) -> AsyncIterator[Callable[..., Awaitable[LiveServer]]]:
    servers: list[LiveServer] = []

    async def make(clock: Clock | None = None, **overrides) -> LiveServer:
        server = await LiveServer(make_settings(**overrides), clock).start()
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


def ready_trace(
    trace_id: str = "tinyformer-step-sm70", arch: str = "sm_70", kernels: int = 15, **fields
) -> TraceDetail:
    now = utcnow()
    values: dict[str, Any] = dict(
        id=trace_id,
        state="ready",
        created_at=now,
        updated_at=now,
        trace_gpu_arch=arch,
        kernel_count=kernels,
        bytes=1234,
        metadata={"status": "ok"},
        kernels=[
            KernelLaunch(kernel_id=i + 1, name=f"_Z6kernel{i}v", grid=(1, 1, 1), block=(32, 1, 1))
            for i in range(kernels)
        ],
    )
    values.update(fields)
    return TraceDetail(**values)


def sim_summary(
    sim_id: str = "sim-1",
    replica: int = 0,
    state: SimState = "running",
    done: int = 0,
    total: int = 0,
    **fields: Any,
) -> SimSummary:
    """A sim as the API lists it: replica `replica` of SM7_QV100 in run-1, `done` of its `total`
    kernels done, unless `fields` say otherwise."""
    values: dict[str, Any] = dict(run_id="run-1", gpu_config="SM7_QV100", created_at=utcnow())
    values.update(fields)
    return SimSummary(
        id=sim_id, replica=replica, state=state, kernels_done=done, kernels_total=total, **values
    )


def write_config(root: Path, name: str, text: str) -> None:
    path = root / "gpu-simulator/gpgpu-sim/configs/tested-cfgs" / name / "gpgpusim.config"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def accelsim_dir(tmp_path: Path) -> Path:
    root = tmp_path / "accelsim"
    write_config(
        root,
        "SM7_QV100",
        "# Volta\n-gpgpu_compute_capability_major 7\n-gpgpu_compute_capability_minor 0\n"
        "-gpgpu_clock_domains 1132.0:1132.0:1132.0:850.0\n",
    )
    write_config(
        root, "SM7_TITANV", "-gpgpu_clock_domains 1200.0:1200.0:1200.0:850.0\n"
    )  # arch from the name
    write_config(
        root,
        "SM6_TITANX",
        "-gpgpu_compute_capability_major 6\n-gpgpu_compute_capability_minor 1\n"
        "-gpgpu_clock_domains 1417.0:1417.0:1417.0:2500.0\n",
    )
    write_config(
        root,
        "SM75_RTX2060",
        "-gpgpu_compute_capability_major 7\n-gpgpu_compute_capability_minor 5\n"
        "-gpgpu_clock_domains 1365:1365:1365:3500.5\n",
    )
    write_config(root, "BROKEN", "-gpgpu_n_clusters 4\n")  # no clock: skipped
    write_config(root, "weird_name", "-gpgpu_clock_domains 1000:1:1:1\n")  # no arch: skipped
    return root


@dataclass
class RcloneS3:
    endpoint: str
    access_key: str
    secret_key: str
    root: Path
    bucket: str = "cascade"

    def client(self):
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name="us-east-1",
            config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
        )


@pytest.fixture(scope="session")
def rclone_s3(tmp_path_factory):
    """A real `rclone serve s3` (the embedded server's binary) for the whole session."""
    root = tmp_path_factory.mktemp("s3")
    (root / "cascade").mkdir()
    port = free_port()
    info = RcloneS3(f"http://127.0.0.1:{port}", "TESTACCESSKEY0001", "testsecretkey0000000001", root)
    proc = start_rclone(port, root, S3Info(info.endpoint, info.bucket, info.access_key, info.secret_key))
    deadline = time.monotonic() + 20
    while True:  # poll until it accepts connections (not a fixed sleep)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("rclone serve s3 did not start") from None
            time.sleep(0.05)
    yield info
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[None]:
    """A real single-node Slurm, up once for the session and down at its end (tests/slurm/cluster.py)."""
    from tests.slurm.cluster import cluster_for_session

    yield from cluster_for_session()


def pytest_make_parametrize_id(config: pytest.Config, val: object, argname: str) -> str | None:
    """A long str/bytes parameter (a hostile body of 200 KB) is named by its length, not spelled out:
    the node id goes into PYTEST_CURRENT_TEST, which every subprocess a test starts inherits, and an
    environment string past 128 KiB makes exec fail with E2BIG."""
    if isinstance(val, (str, bytes)) and len(val) > 80:
        return f"{argname}-{len(val)}{'B' if isinstance(val, bytes) else 'ch'}"
    return None


# The tiers by where a test lives (pyproject's `markers` say what each needs). A test file in
# another folder joins a tier with a module-level `pytestmark`; every tier is also `slow`.
TIERS_BY_PATH = {"tests/e2e/": "e2e", "tests/slurm/": "slurm", "tests/web/": "browser"}
TIERS = {"e2e", "slurm", "tmux", "browser", "accelsim"}
# Tests that share something one machine has once run in one xdist worker, one after another
# (`--dist loadgroup`): the session's Slurm cluster, and the default ports 8000 and 9020 that
# `cascade up` tries first.
DEFAULT_PORT_FILES = {"test_tmux_default_ports.py", "test_up.py", "test_up_ports.py", "test_cli_commands.py"}


# First, whatever order the plugins were registered in: pytest-xdist's worker turns the
# `xdist_group` marks into node-id suffixes in its own hook of this name, so the marks must exist
# by then (pyproject pins pytest below 9.2, where those suffixes stopped working at all).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(__file__).resolve().parents[1]
    for item in items:
        where = Path(str(item.path)).resolve().relative_to(root).as_posix()
        for prefix, tier in TIERS_BY_PATH.items():
            if where.startswith(prefix):
                item.add_marker(tier)
        if "slurm_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker("slurm")
            item.add_marker(pytest.mark.xdist_group("slurm"))
        elif item.path.name in DEFAULT_PORT_FILES:
            item.add_marker(pytest.mark.xdist_group("default-ports"))
        if TIERS & {mark.name for mark in item.iter_markers()}:
            item.add_marker("slow")
            # A system test (real servers, simulators, Slurm, tmux, a browser) gets a second try:
            # on 2 shared cores its timing is partly the machine's. Twice is a failure, and the
            # run's summary counts every rerun. The fast lane gets no second try.
            item.add_marker(pytest.mark.flaky(reruns=1, reruns_delay=2))
