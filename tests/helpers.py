"""The test suite's waiting-and-wiring helpers, one copy each (fixtures live in conftest.py):
ports, waiting for a condition, the recorded logs, `cascade serve` as a process, and the run
API as tests drive it."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import inspect
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import pytest
from httpx_sse import aconnect_sse

from cascade_core.models import utcnow
from cascade_core.s3_endpoint import S3Info, make_client

REPO = Path(__file__).resolve().parents[1]
# Real Accel-Sim logs (shared/samples-real/runs/<CONFIG>/run.log), shipped gzipped in the repo.
RECORDINGS = REPO / "samples" / "recordings"
# What those logs report per config: each kernel's cycles, the run's totals (tests/data/recordings/).
RECORDED_RESULTS: dict[str, dict[str, Any]] = json.loads(
    (Path(__file__).with_name("data") / "recordings" / "expected.json").read_text()
)
TRACE_ID = "tinyformer-step-sm70"  # the ready trace of `tests.conftest.ready_trace`


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, for a server in another
    process (a server in this process takes a socket from `reserve_port` instead: no race)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def listening(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:`port`."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    except OSError:
        return False
    return True


# Sockets the OS bound for servers this process will start, by port (`reserve_port`).
RESERVED: dict[int, socket.socket] = {}


def reserve_port() -> int:
    """A port the OS chose, held by a bound socket until this process's server listens on it
    (`take_reserved`): parallel test workers cannot be handed the same port."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    RESERVED[port] = sock
    return port


def take_reserved(port: int) -> socket.socket | None:
    """The socket `reserve_port` holds for `port`, once; None when it holds none."""
    return RESERVED.pop(port, None)


class ManualClock:
    """The heartbeat monitor's clock in tests (cascade_server.clock): time moves only when the
    test calls `advance`, so a timeout is a step of the test, not a real wait on a busy machine.
    Its wall time is the real one plus what the test advanced, so times the server stamps
    itself (a heartbeat's arrival) are never ahead of it."""

    def __init__(self) -> None:
        self._t = 0.0
        self._moved = asyncio.Condition()
        self._waking_at: list[float] = []  # when each task in `sleep` wakes: the monitor between ticks

    def monotonic(self) -> float:
        return self._t

    def now(self) -> datetime:
        return utcnow() + timedelta(seconds=self._t)

    async def sleep(self, seconds: float) -> None:
        until = self._t + seconds
        async with self._moved:
            self._waking_at.append(until)
            try:
                await self._moved.wait_for(lambda: self._t >= until)
            finally:
                self._waking_at.remove(until)

    async def advance(self, seconds: float, step: float = 0.05) -> None:
        """Move time on by `seconds`, in steps; after each step, wait until every sleeper it woke
        has done its work and sleeps again (the monitor's tick is committed)."""
        await wait_until(lambda: self._waking_at, 30, 0.01)
        sleepers = len(self._waking_at)
        end = self._t + seconds
        while self._t < end:
            async with self._moved:
                self._t = min(end, self._t + step)
                self._moved.notify_all()
            await wait_until(
                lambda: len(self._waking_at) >= sleepers and all(due > self._t for due in self._waking_at),
                30,
                0.01,
            )


async def wait_until(
    check: Callable[[], Any],
    timeout: float = 90.0,
    interval: float = 0.05,
    *,
    what: str | Callable[[], str] = "the condition",
    pause: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> Any:
    """Call `check` (plain or async) until it returns something truthy and return that; fail
    with `what` (a text, or a function giving one: the state that was not reached) and the last
    result after `timeout` seconds. The condition is what the test waits for: a generous timeout
    only matters when the test is failing anyway. `pause` waits between calls (a Textual Pilot's
    `pause`, so the app under test runs meanwhile)."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return result
        if time.monotonic() > deadline:
            said = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout} s (last: {result!r}) waiting for {said}")
        await pause(interval)


@contextlib.contextmanager
def small_tmpfs(directory: Path, options: str) -> Iterator[Path]:
    """`directory` (made if missing) as a tmpfs mounted with `options` (`size=3m`, ...) for the
    duration: a small real disk to fill. Skips the test where it cannot be mounted (needs root)."""
    directory.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None:
        pytest.skip("no mount command to make a small tmpfs")
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(directory)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs (needs root or CAP_SYS_ADMIN): {result.stderr.strip()}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], capture_output=True, timeout=30)


def remount_tmpfs(directory: Path, options: str) -> subprocess.CompletedProcess:
    """Change a `small_tmpfs` in place (`size=64m`: space is back)."""
    return subprocess.run(
        ["mount", "-o", f"remount,{options}", str(directory)], capture_output=True, text=True, timeout=30
    )


# --- the recorded logs --------------------------------------------------------------------------


def recording(config: str = "SM7_QV100") -> bytes:
    """The complete stdout of a real Accel-Sim run on `config`, byte for byte (as a sim's log
    reads back from the API)."""
    return gzip.decompress((RECORDINGS / f"{config}.log.gz").read_bytes())


def recorded_log(config: str = "SM7_QV100") -> list[str]:
    """The lines of `recording(config)`, as a worker posts them."""
    return recording(config).decode().splitlines()


def recorded_kernel_names(config: str = "SM7_QV100") -> list[str]:
    """The kernels of `recorded_log(config)` as its stats blocks name them, in order: a trace's
    real timing that names these times the kernels those sims ran."""
    return [
        line.split("=", 1)[1].strip() for line in recorded_log(config) if line.startswith("kernel_name = ")
    ]


# --- processes ------------------------------------------------------------------------------------


async def exit_status(proc: subprocess.Popen, timeout: float = 60.0) -> int:
    """`proc`'s exit status once it has ended, waited for without blocking the event loop."""
    await wait_until(lambda: proc.poll() is not None, timeout, what=f"process {proc.pid} to end")
    return proc.returncode


# --- an S3 endpoint of the test's own ---------------------------------------------------------------


def start_rclone(port: int, root: Path, info: S3Info) -> subprocess.Popen:
    """`rclone serve s3` (the embedded endpoint's binary) of `root` on `port`, with `info`'s
    credentials; `s3_answers` says when it serves."""
    from cascade_server.traces.embedded_s3 import rclone_binary

    return subprocess.Popen(
        [str(rclone_binary()), "serve", "s3", "--addr", f"127.0.0.1:{port}", str(root)],
        env={"RCLONE_AUTH_KEY": f'"{info.access_key},{info.secret_key}"', "RCLONE_CONFIG": "/dev/null"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def s3_answers(info: S3Info) -> bool:
    try:
        make_client(info).list_objects_v2(Bucket=info.bucket, MaxKeys=1)
    except Exception:  # noqa: BLE001 - refused, reset: not (yet) answering
        return False
    return True


def own_endpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int) -> tuple[S3Info, int]:
    """The settings of an S3 endpoint of the test's own on a free port (credentials number `n`),
    its bucket made under tmp_path/"s3" and its credentials in the environment, where the
    scanner reads them."""
    port = free_port()
    access_key, secret_key = f"TESTACCESSKEY000{n}", f"testsecretkey000000000{n}"
    (tmp_path / "s3" / "cascade").mkdir(parents=True)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret_key)
    return S3Info(f"http://127.0.0.1:{port}", "cascade", access_key, secret_key), port


class Result(NamedTuple):
    code: int
    out: str
    err: str


async def run_cascade(*args: str, env: Mapping[str, str]) -> Result:
    """`cascade ARGS` in a subprocess with exactly `env`, waited for without blocking the event
    loop (a server of the test's may run in it)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cascade_tui.cli",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return Result(proc.returncode, out.decode(), err.decode())


# --- `cascade serve` as a process ---------------------------------------------------------------


class ServeProcess:
    """`cascade serve` as a real process on a fixed port and data dir, as an operator runs it:
    killed and started again on them, it is a server restart. Its startup lines go to
    `<log>.out`, what it logs to `log`, both kept across restarts. `env` is over the test's own
    environment (whose CASCADE_* variables the test set: tests/conftest.py's `clean_env`), and
    the process has the manual launcher and an embedded S3 port of its own unless `env` says
    otherwise."""

    def __init__(
        self,
        data_dir: Path,
        port: int | None = None,
        env: Mapping[str, str] | None = None,
        *,
        log: Path | None = None,
        environ: Mapping[str, str] | None = None,
        own_group: bool = False,
    ) -> None:
        self.data_dir = data_dir
        self.port = port or free_port()
        self.env = {
            **(os.environ if environ is None else environ),
            "CASCADE_LAUNCHER": "manual",
            "CASCADE_S3_PORT": str(free_port()),  # parallel tests' servers never share the default
            **(env or {}),
        }
        self.log = log or data_dir.with_name(f"{data_dir.name}-serve.log")
        self.out = self.log.with_suffix(".out")
        # A process group of its own, as a shell gives a foreground job: the test can send the
        # group a SIGINT as Ctrl+C on a terminal does.
        self.own_group = own_group
        self.proc: subprocess.Popen | None = None
        self.token: str | None = None
        self._since = (0, 0)  # where this start's output begins in `out` and `log`

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def spawn(self) -> subprocess.Popen:
        """Start the process and return at once (`start` waits until it serves)."""
        self._since = (self._size(self.out), self._size(self.log))
        with open(self.out, "ab") as out, open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "cascade_tui.cli",
                    "serve",
                    "--port",
                    str(self.port),
                    "--data-dir",
                    str(self.data_dir),
                ],
                env=self.env,
                stdout=out,
                stderr=log,
                stdin=subprocess.DEVNULL,
                cwd=REPO,
                process_group=0 if self.own_group else None,
            )
        return self.proc

    async def start(self, timeout: float = 60.0) -> ServeProcess:
        """Start it and wait until it serves: its startup lines are out (they follow the listen).
        Started again, it first waits for the last start's embedded S3 endpoint (which a killed
        server's death stops) to let go of the port."""
        if "CASCADE_S3_ENDPOINT" not in self.env:
            s3_port = int(self.env["CASCADE_S3_PORT"])
            await wait_until(lambda: not listening(s3_port), timeout, what=f"port {s3_port} to be free")
        proc = self.spawn()
        last = "s3_bucket" if "CASCADE_S3_ENDPOINT" in self.env else "s3_secret_key"

        def serving() -> bool:
            assert proc.poll() is None, f"`cascade serve` exited {proc.returncode}\n{self.said()}"
            return last in self.lines()

        await wait_until(serving, timeout, 0.1, what=lambda: f"`cascade serve` to start\n{self.said()}")
        self.token = self.lines()["token"]
        return self

    @staticmethod
    def _size(path: Path) -> int:
        return path.stat().st_size if path.exists() else 0

    def lines(self) -> dict[str, str]:
        """This start's startup lines (`app`, `token`, `s3_endpoint`, ...) by name."""
        text = self.out.read_bytes()[self._since[0] :].decode(errors="replace") if self.out.exists() else ""
        return {key: value for key, _, value in (line.partition(": ") for line in text.splitlines())}

    def logged(self) -> str:
        """What this start has logged (stderr) so far."""
        return self.log.read_bytes()[self._since[1] :].decode(errors="replace") if self.log.exists() else ""

    def said(self) -> str:
        """This start's output, for a failure's message."""
        return f"{json.dumps(self.lines(), indent=1)}\n{self.logged()[-3000:]}"

    def s3_info(self) -> S3Info:
        """The embedded S3 endpoint, as its startup lines give it to a profiler."""
        lines = self.lines()
        return S3Info(
            lines["s3_endpoint"], lines["s3_bucket"], lines["s3_access_key"], lines["s3_secret_key"]
        )

    def client(self, timeout: float = 30.0) -> httpx.AsyncClient:
        """An API client with the token it printed."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=timeout)

    def send_signal(self, sig: signal.Signals) -> None:
        """Send `sig` while it runs, without waiting (SIGSTOP: frozen; SIGCONT: running again)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)

    async def ended(self, timeout: float = 60.0) -> int:
        """Its exit status, once it has ended (without signalling it)."""
        assert self.proc is not None
        return await exit_status(self.proc, timeout)

    async def stop(self, sig: signal.Signals = signal.SIGTERM, timeout: float = 60.0) -> int | None:
        """Send `sig` (SIGTERM: a clean stop) and wait for the end; its exit status (None: never
        started). One that has not ended after `timeout` is killed, and that is a failure."""
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(sig)
            try:
                await self.ended(timeout)
            except AssertionError:
                proc.kill()
                proc.wait(timeout=30)
                raise AssertionError(
                    f"`cascade serve` did not end within {timeout} s of {sig.name}"
                ) from None
        return proc.returncode

    async def kill(self) -> None:
        """kill -9, as a crash or a power cut ends it."""
        await self.stop(signal.SIGKILL)


# --- the run API as tests drive it ----------------------------------------------------------------


RunEntries = Sequence[tuple[str, int] | Mapping[str, Any]]


async def post_run(
    http: httpx.AsyncClient, entries: RunEntries, trace_id: str = TRACE_ID, **fields: Any
) -> httpx.Response:
    """`POST /api/runs` as given: its entries `(gpu_config, count)` or the API's own entry
    objects, `fields` beside them."""
    return await http.post(
        "/api/runs",
        json={
            "trace_id": trace_id,
            "entries": [
                dict(entry) if isinstance(entry, Mapping) else {"gpu_config": entry[0], "count": entry[1]}
                for entry in entries
            ],
            **fields,
        },
    )


async def create_run(
    http: httpx.AsyncClient, entries: RunEntries = (("SM7_QV100", 2),), trace_id: str = TRACE_ID
) -> dict:
    """A new run (201)."""
    resp = await post_run(http, entries, trace_id)
    assert resp.status_code == 201, resp.text
    return resp.json()


async def get_run(http: httpx.AsyncClient, run_id: str) -> dict:
    resp = await http.get(f"/api/runs/{run_id}")
    resp.raise_for_status()
    return resp.json()


async def finished_run(http: httpx.AsyncClient, run_id: str, timeout: float = 120.0) -> dict:
    """The run once it is no longer active."""

    async def done():
        run = await get_run(http, run_id)
        return run if run["state"] != "active" else None

    return await wait_until(done, timeout, what=f"run {run_id} to finish")


async def sims_when(
    http: httpx.AsyncClient, run_id: str, condition: Callable[[list[dict]], object], timeout: float = 60.0
) -> list[dict]:
    """The run's sims, once `condition(sims)` holds."""

    async def check() -> list[dict] | None:
        sims = (await get_run(http, run_id))["sims"]
        return sims if condition(sims) else None

    return await wait_until(check, timeout, what=f"the sims of run {run_id} to reach a state")


def all_running(sims: list[dict]) -> bool:
    return all(s["state"] == "running" for s in sims)


def running_midway(sims: list[dict]) -> bool:
    """Every sim running, some of its 15 kernels done and some not."""
    return all(s["state"] == "running" and 0 < s["kernels_done"] < 15 for s in sims)


async def record_sim_states(http: httpx.AsyncClient, run_id: str, states: dict[str, list[str]]) -> None:
    """Every state each sim shows on the run's event stream, snapshot first."""
    async with aconnect_sse(http, "GET", f"/api/runs/{run_id}/events", timeout=None) as source:
        async for event in source.aiter_sse():
            data = json.loads(event.data)
            sims = (
                data["run"]["sims"]
                if data["type"] == "snapshot"
                else [data["sim"]]
                if data["type"] == "sim"
                else []
            )
            for sim in sims:
                if not states[sim["id"]] or states[sim["id"]][-1] != sim["state"]:
                    states[sim["id"]].append(sim["state"])


@contextlib.asynccontextmanager
async def sim_states(http: httpx.AsyncClient, run_id: str) -> AsyncIterator[dict[str, list[str]]]:
    """Every state each sim of the run shows while the block runs (`record_sim_states`)."""
    states: dict[str, list[str]] = defaultdict(list)
    watcher = asyncio.create_task(record_sim_states(http, run_id, states))
    try:
        yield states
    finally:
        watcher.cancel()


async def store_real_timing(store: Any, trace: Any, doc: Any) -> Any:
    """Give a ready trace of `store` the real timing `doc` (a parsed real_timing.json) as the
    scanner does when the trace becomes ready: its rows, named after the trace's kernels where
    `doc` names none, stored with the trace, and `has_real_timing` only when they are usable.
    Returns the trace as stored."""
    from cascade_core.real_timing import named_rows, parse_real_timing, timing_problem

    names = {kernel.kernel_id: kernel.name for kernel in trace.kernels}
    rows = named_rows(parse_real_timing(doc), names)
    problem = timing_problem(rows, names)
    rows = [] if problem else rows
    stored = trace.model_copy(update={"has_real_timing": bool(rows), "real_timing_error": problem})
    await store.traces.put_trace(stored, real_timing=rows)
    return stored
