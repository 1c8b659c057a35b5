"""One sim from start to end: run the simulator, stream its output, report, upload.

Tasks while the simulator runs:
- the pump reads the simulator's stdout+stderr, feeds the outcome markers, the local log copy
  and the chunker; full chunks go to the disk spool;
- the flusher cuts a chunk when the oldest pending line is ~0.5 s old;
- the sender posts spooled chunks in `seq` order, retrying until the server has them;
- the heartbeat loop says `running` at once and every few seconds, and stops the sim when an
  ack says `cancel` (or the sim already finished on the server).
After the simulator ends: drain the spool, upload its files, then `accelsim.log.gz`, then the
final heartbeat with the exit code and the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import logging
import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from cascade_core.models import TERMINAL_SIM_STATES, Heartbeat, LogChunk, utcnow
from cascade_core.timeline.stats import pct_text
from cascade_core.trace_layout import has_step_timeline

from . import step_timeline, uploads
from .chunks import Chunker, LineSplitter
from .client import ApiRefused, ServerUnreachable, SimClient
from .environment import simulator_environment
from .outcome import OutputMarkers, classify
from .spool import Spool

log = logging.getLogger("cascade_worker")

READ_SIZE = 64 * 1024
# A chunk the server refuses as for a sim not started (409) is sent again after a running
# heartbeat this many times (about a minute) before the worker gives up.
NOT_STARTED_RETRIES = 40

# Worker exit codes.
EXIT_OK = 0  # the sim succeeded, or was cancelled
EXIT_SIM_FAILED = 1  # reported as failed
EXIT_SETUP = 2  # could not start the simulator (reported as failed when the server was reachable)
EXIT_SERVER = 3  # the server refused us or stayed unreachable
EXIT_SIGNAL = 143  # the worker itself was told to stop


@dataclass
class WorkerPlan:
    """What to run and how to behave; built by the CLI from flags and environment."""

    sim_id: str
    argv: list[str]
    run_dir: Path  # the simulator's working directory (holds the config files in real mode)
    scratch: Path  # run_dir, the spool and the local log copy live under it
    heartbeat_interval: float = 5.0
    kill_grace: float = 10.0
    give_up_after: float = 6 * 3600.0
    keep_scratch: bool = False
    trace_dir: Path | None = None  # for the step timeline, when the trace has one
    send_step_timeline: bool = True  # False for a shard: the server merges its replica's
    library_dir: Path | None = (
        None  # real mode: the simulator's own libcudart folder, first on LD_LIBRARY_PATH
    )


def make_scratch(sim_id: str, parent: Path | None) -> Path:
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"cascade-{sim_id}-", dir=parent))


class Worker:
    def __init__(self, plan: WorkerPlan, client: SimClient) -> None:
        self.plan = plan
        self.client = client
        self.markers = OutputMarkers()
        self.chunker = Chunker()
        self.spool_dir = plan.scratch / "spool"
        self.log_path = plan.scratch / "accelsim.log"
        self._stop = asyncio.Event()
        self._stop_reason: str | None = None  # "cancel", "finished on the server", a signal, an API error
        self._exit_code_on_stop = EXIT_OK
        self._spooled = asyncio.Event()
        self._output_done = False
        self._proc: asyncio.subprocess.Process | None = None
        self._started_at: datetime | None = None  # when the simulator started, as this host saw it
        self._running_reported = False  # a running heartbeat reached the server
        self._first_lines: list[str] = []

    # --- control ----------------------------------------------------------------------------

    def log_first(self, line: str) -> None:
        """A line of Cascade's own at the top of the sim's log (a shard says which it is)."""
        self._first_lines.append(line)

    def request_stop(self, reason: str, exit_code: int) -> None:
        if not self._stop.is_set():
            self._stop_reason = reason
            self._exit_code_on_stop = exit_code
            self._stop.set()

    # --- main -------------------------------------------------------------------------------

    async def run(self) -> int:
        self.spool = Spool(self.spool_dir)
        self.plan.run_dir.mkdir(parents=True, exist_ok=True)
        before = uploads.snapshot(self.plan.run_dir)
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(
                signum, self.request_stop, f"worker stopped by {signal.Signals(signum).name}", EXIT_SIGNAL
            )
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self.plan.argv,
                cwd=self.plan.run_dir,
                env=simulator_environment(os.environ, self.plan.library_dir),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
        except OSError as exc:
            return await self.report_setup_failure(f"cannot start the simulator: {exc.strerror or exc}")
        self._started_at = utcnow()  # every running heartbeat says so, however late it arrives
        log.info("simulator started (pid %d): %s", self._proc.pid, " ".join(self.plan.argv))
        heartbeats = asyncio.create_task(self._heartbeats(), name="heartbeats")
        sender = asyncio.create_task(self._sender(), name="sender")
        pump = asyncio.create_task(self._pump(), name="pump")
        flusher = asyncio.create_task(self._flusher(), name="flusher")
        stop_wait = asyncio.create_task(self._stop.wait(), name="stop")
        try:
            await asyncio.wait({pump, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
            if self._stop.is_set():
                return await self._stopped(pump, flusher, sender, heartbeats)
            returncode = await self._proc.wait()
            ended_at = utcnow()  # the final heartbeat's time, kept through its retries
            flusher.cancel()
            self._finish_output()
            outcome = classify(returncode, self.markers)
            exit_code = returncode if returncode >= 0 else 128 - returncode
            log.info(
                "simulator exited %d: %s%s",
                returncode,
                outcome.state,
                f" ({outcome.error})" if outcome.error else "",
            )
            # Everything below waits on the server; a cancel or a signal still ends it early.
            finishing = asyncio.create_task(
                self._finish(sender, heartbeats, before, outcome, exit_code, ended_at)
            )
            await asyncio.wait({finishing, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
            if finishing.done():
                return finishing.result()
            finishing.cancel()
            log.warning("stopping before the final report: %s", self._stop_reason)
            return self._exit_code_on_stop
        finally:
            for task in (heartbeats, sender, pump, flusher, stop_wait):
                task.cancel()
            await asyncio.gather(heartbeats, sender, pump, flusher, stop_wait, return_exceptions=True)
            if self._proc.returncode is None:
                await self._terminate()
            if len(self.spool):
                log.warning(
                    "%d log chunks never reached the server; they are in %s", len(self.spool), self.spool_dir
                )
            elif not self.plan.keep_scratch:
                shutil.rmtree(self.plan.scratch, ignore_errors=True)

    async def report_setup_failure(self, reason: str) -> int:
        """The simulator could not start: say so to the server as the sim's failure."""
        log.error("%s", reason)
        try:
            await self.client.heartbeat(
                Heartbeat(state="failed", error=reason, at=utcnow()), give_up_after=60
            )
        except (ApiRefused, ServerUnreachable) as exc:
            log.error("could not report the failure: %s", exc)
            return EXIT_SERVER
        return EXIT_SETUP

    # --- the simulator ends -----------------------------------------------------------------

    async def _finish(self, sender, heartbeats, before, outcome, exit_code: int, ended_at: datetime) -> int:
        try:
            await sender  # drains the spool: every line is on the server
            await self._upload_files(before)
            await self._upload_log()
            if (
                outcome.state == "succeeded"
                and self.plan.send_step_timeline
                and has_step_timeline(self.plan.trace_dir)
            ):
                await self._send_step_timeline()
            heartbeats.cancel()
            await asyncio.gather(heartbeats, return_exceptions=True)
            if not self._running_reported:
                # The server was down the whole run (its running heartbeat was still being
                # retried): tell it when the sim started before telling it how it ended.
                await self.client.heartbeat(Heartbeat(state="running", at=self._started_at))
            ack = await self.client.heartbeat(
                Heartbeat(state=outcome.state, exit_code=exit_code, error=outcome.error, at=ended_at)
            )
        except ApiRefused as exc:
            log.error("the server refused the report: %s", exc)
            return EXIT_SERVER
        except ServerUnreachable as exc:
            log.error("%s", exc)
            return EXIT_SERVER
        log.info("reported %s; the server has the sim as %s", outcome.state, ack.state)
        return EXIT_OK if outcome.state == "succeeded" else EXIT_SIM_FAILED

    async def _upload_files(self, before: uploads.Snapshot) -> None:
        written = uploads.written_since(before, uploads.snapshot(self.plan.run_dir))
        for relative in written:
            upload = await asyncio.to_thread(uploads.prepare, self.plan.run_dir, relative)
            if upload is None:
                log.warning("not uploading %s (name not allowed or over 64 MiB)", relative)
                continue
            try:
                await self.client.put_file(upload.name, upload.data)
            except ApiRefused as exc:
                if exc.status != 413:
                    raise
                log.warning("the server refused %s: %s", upload.name, exc.detail)

    async def _send_step_timeline(self) -> None:
        """Never fails the sim: a problem is logged and uploaded as the sim's error file."""
        assert self.plan.trace_dir is not None
        try:
            upload = await step_timeline.send_step_timeline(self.client, self.plan.trace_dir)
        except step_timeline.StepTimelineError as exc:
            log.warning("step timeline not sent: %s", exc)
            await self.client.put_file(step_timeline.ERROR_FILE, f"step timeline not sent: {exc}\n".encode())
            return
        wall = upload.compare["summary"]["wall_ns"] if upload.compare else {}
        log.info(
            "step timeline sent: %d steps, mean |wall error| %s",
            len(upload.simulated["steps"]),
            pct_text(wall.get("mean_abs_error_pct"), digits=1),
        )

    async def _upload_log(self) -> None:
        data = await asyncio.to_thread(_gzip_file, self.log_path)
        try:
            await self.client.put_file(uploads.LOG_NAME, data)
        except ApiRefused as exc:
            if exc.status != 413:
                raise
            log.warning("the server refused %s: %s", uploads.LOG_NAME, exc.detail)

    # --- stopped early (cancel, signal, refused) --------------------------------------------

    async def _stopped(self, pump, flusher, sender, heartbeats) -> int:
        log.info("stopping the simulator: %s", self._stop_reason)
        await self._terminate()
        heartbeats.cancel()
        try:
            await asyncio.wait_for(pump, timeout=5)
        except (TimeoutError, Exception):
            pass
        flusher.cancel()
        self._finish_output()
        # Send what is left of the output, briefly: the sim is over on the server anyway.
        try:
            await asyncio.wait_for(asyncio.shield(sender), timeout=5)
        except (TimeoutError, Exception):
            pass
        if self._exit_code_on_stop == EXIT_SIGNAL:
            try:
                await self.client.heartbeat(
                    Heartbeat(state="failed", error=self._stop_reason, at=utcnow()), give_up_after=5
                )
            except (ApiRefused, ServerUnreachable):
                pass
        return self._exit_code_on_stop

    async def _terminate(self) -> None:
        """TERM, then KILL after the grace period."""
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        try:
            proc.terminate()
            await asyncio.wait_for(proc.wait(), timeout=self.plan.kill_grace)
        except TimeoutError:
            log.warning("simulator ignored SIGTERM for %.0f s; killing it", self.plan.kill_grace)
            proc.kill()
            await proc.wait()
        except ProcessLookupError:
            pass

    # --- the tasks --------------------------------------------------------------------------

    def _spool(self, chunks: list[LogChunk]) -> None:
        for chunk in chunks:
            self.spool.put(chunk)
        if chunks:
            self._spooled.set()

    def _finish_output(self) -> None:
        if not self._output_done:
            self._output_done = True
            last = self.chunker.flush()
            self._spool([last] if last else [])
            self._spooled.set()

    async def _pump(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        splitter = LineSplitter()
        with open(self.log_path, "w", encoding="utf-8", errors="replace", newline="\n") as copy:
            for line in self._first_lines:
                copy.write(line + "\n")
            self._spool(self.chunker.add(list(self._first_lines), time.monotonic()))
            while True:
                data = await self._proc.stdout.read(READ_SIZE)
                lines = splitter.feed(data) if data else splitter.finish()
                for line in lines:
                    self.markers.feed(line)
                    copy.write(line)
                    copy.write("\n")
                self._spool(self.chunker.add(lines, time.monotonic()))
                if not data:
                    return

    async def _flusher(self) -> None:
        while True:
            wait = self.chunker.seconds_until_due(time.monotonic())
            await asyncio.sleep(0.1 if wait is None else max(wait, 0.02))
            chunk = self.chunker.due(time.monotonic())
            if chunk is not None:
                self._spool([chunk])

    async def _sender(self) -> None:
        refused = 0  # 409s in a row: the server has the sim as not started yet
        while True:
            chunk = self.spool.oldest()
            if chunk is None:
                if self._output_done:
                    return
                self._spooled.clear()
                await self._spooled.wait()
                continue
            try:
                # Never give up on a chunk while the sim runs; a long outage just grows the spool.
                await self.client.send_chunk(chunk, give_up_after=self.plan.give_up_after)
            except ApiRefused as exc:
                if exc.status == 409 and refused < NOT_STARTED_RETRIES:
                    # The server still has the sim `pending` (a chunk that overtook the first
                    # running heartbeat, or a scheduler's sim it has not seen start): say it
                    # runs, then send the chunk again.
                    refused += 1
                    await asyncio.sleep(min(0.2 * refused, 2.0))
                    with contextlib.suppress(ApiRefused, ServerUnreachable):
                        await self.client.heartbeat(
                            Heartbeat(state="running", at=self._started_at), give_up_after=5
                        )
                    continue
                if exc.status == 422:  # cannot happen with our own chunks; do not block the rest
                    log.error("the server refused chunk %d: %s", chunk.seq, exc.detail)
                else:
                    self.request_stop(f"the server refused the log: {exc}", EXIT_SERVER)
                    return
            except ServerUnreachable as exc:
                self.request_stop(str(exc), EXIT_SERVER)
                return
            self.spool.remove(chunk.seq)
            refused = 0

    async def _heartbeats(self) -> None:
        while True:
            try:
                ack = await self.client.heartbeat(
                    Heartbeat(state="running", at=self._started_at), give_up_after=self.plan.give_up_after
                )
                self._running_reported = True
            except ApiRefused as exc:
                self.request_stop(f"the server refused the heartbeat: {exc}", EXIT_SERVER)
                return
            except ServerUnreachable as exc:
                self.request_stop(str(exc), EXIT_SERVER)
                return
            if ack.cancel:
                self.request_stop("cancelled", EXIT_OK)
                return
            if ack.state in TERMINAL_SIM_STATES:
                self.request_stop(f"the server already has this sim as {ack.state}", EXIT_OK)
                return
            await asyncio.sleep(self.plan.heartbeat_interval)


def _gzip_file(path: Path) -> bytes:
    data = path.read_bytes() if path.exists() else b""
    return gzip.compress(data, compresslevel=6, mtime=0)


async def run_worker(plan: WorkerPlan, client: SimClient) -> int:
    return await Worker(plan, client).run()
