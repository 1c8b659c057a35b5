"""One sim from start to end: run the simulator (again past a kernel it failed on), stream its
output, report, upload.

Tasks while the sim runs (the log stream's two for all its simulators, log_stream.py):
- the pump reads a simulator's stdout+stderr and hands each line to the outcome markers, the
  kernel watch and the log stream;
- the log stream's flusher and sender cut chunks and send them in `seq` order;
- the heartbeat loop says `running` at once and every few seconds, and stops the sim when an
  ack says `cancel` (or the sim already finished on the server);
- with a kernel wall limit, a watchdog stops a simulator whose kernel makes no progress.
Each simulator runs within the sim's limits (sim_limits.py: memory, CPU time for the whole sim,
file size). When a simulator exits, the simulation (simulation.py) says what follows: the sim's
outcome (a limit reached ends it), or the next simulator (on the kernels after one it failed on).
After the last: drain the spool, upload the files (sim_outputs.py), then `accelsim.log.gz`, then
the final heartbeat with the exit code and the reason. What is left of the scratch directory
then is scratch.py's rule.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from cascade_core.log_notes import PREFIX
from cascade_core.models import TERMINAL_SIM_STATES, Heartbeat, HeartbeatAck, utcnow
from cascade_core.trace_layout import has_step_timeline

from . import sim_outputs, uploads
from .client import ApiRefused, ServerUnreachable, SimClient
from .environment import simulator_environment
from .host_limits import child_limits, children_cpu_seconds
from .kernel_watch import KernelWatch
from .log_stream import LogStream
from .outcome import Outcome, OutputMarkers
from .power_tail import PowerTail
from .scratch import leave_scratch
from .sim_limits import SimLimits, limit_reached
from .simulation import Simulation
from .simulator_process import SimulatorProcess

log = logging.getLogger("cascade_worker")

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
    # Real mode: the sim's own kernel lists, simulator after simulator (else `argv`, once).
    simulation: Simulation | None = None
    # Stop a simulator whose kernels make no progress for this long (0: never; GPGPU-Sim's own
    # deadlock detection still applies); the kernel counts as failed in the simulator.
    kernel_wall_limit_s: float = 0.0
    limits: SimLimits = SimLimits()  # what each simulator process may take (none: no limit)
    log_limit_mb: int = 0  # the sim's log limit (log_stream.py; 0: none)
    power: bool = False  # AccelWattch is on: its report is read as it grows (power_tail.py)


class Worker:
    def __init__(self, plan: WorkerPlan, client: SimClient) -> None:
        self.plan = plan
        self.client = client
        self.stream = LogStream(
            plan.scratch, client, plan.give_up_after, self._log_refused, plan.log_limit_mb
        )
        self.markers = OutputMarkers()
        self.watch: KernelWatch | None = None
        self._stop = asyncio.Event()
        self._stop_reason: str | None = None  # "cancel", "finished on the server", a signal, an API error
        self._exit_code_on_stop = EXIT_OK
        self._proc: SimulatorProcess | None = None
        self._forced: str | None = None  # why the worker stopped the simulator itself
        self._started_at: datetime | None = None  # when the simulator started, as this host saw it
        self._running_reported = False  # a running heartbeat reached the server
        self._first_lines: list[str] = []
        self._cpu_used = 0.0  # CPU seconds of the sim's simulators that ended
        self._cpu_at_start = 0.0  # the worker's children's CPU time when the current one started
        self._wanted = True  # the server still wants the sim's output (False: cancelled)
        self.power = PowerTail(plan.run_dir, plan.scratch / "power-reports") if plan.power else None

    # --- control ----------------------------------------------------------------------------

    def log_first(self, line: str) -> None:
        """A line of Cascade's own at the top of the sim's log (a shard says which it is)."""
        self._first_lines.append(line)

    def request_stop(self, reason: str, exit_code: int) -> None:
        if not self._stop.is_set():
            self._stop_reason = reason
            self._exit_code_on_stop = exit_code
            self._stop.set()

    def _log_refused(self, reason: str) -> None:
        self.request_stop(reason, EXIT_SERVER)

    # --- main -------------------------------------------------------------------------------

    async def run(self) -> int:
        self.simulation = self.plan.simulation or Simulation(self.plan.argv)
        self.plan.run_dir.mkdir(parents=True, exist_ok=True)
        before = uploads.snapshot(self.plan.run_dir)
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(
                signum, self.request_stop, f"worker stopped by {signal.Signals(signum).name}", EXIT_SIGNAL
            )
        try:
            await self._start_simulator()
        except OSError as exc:
            code = await self.report_setup_failure(f"cannot start the simulator: {exc.strerror or exc}")
            leave_scratch(
                self.plan.scratch, self.stream.log_path, keep=self.plan.keep_scratch, unsent=0, wanted=False
            )
            return code
        self._started_at = utcnow()  # every running heartbeat says so, however late it arrives
        self.stream.open()
        self.stream.note(list(self._first_lines))
        heartbeats = asyncio.create_task(self._heartbeats(), name="heartbeats")
        sender = asyncio.create_task(self.stream.sender(), name="sender")
        flusher = asyncio.create_task(self.stream.flusher(), name="flusher")
        stop_wait = asyncio.create_task(self._stop.wait(), name="stop")
        tasks = [heartbeats, sender, flusher, stop_wait]
        if self.power is not None:
            tasks.append(asyncio.create_task(self._power_poller(), name="power"))
        try:
            while True:
                pump = asyncio.create_task(self._pump(), name="pump")
                tasks.append(pump)
                await asyncio.wait({pump, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
                if self._stop.is_set():
                    return await self._stopped(pump, flusher, sender, heartbeats)
                outcome = await self._after_simulator()
                if outcome is not None:
                    break
                try:
                    await self._start_simulator()
                except OSError as exc:
                    outcome = Outcome("failed", f"cannot start the simulator again: {exc.strerror or exc}")
                    break
            ended_at = utcnow()  # the final heartbeat's time, kept through its retries
            if self.power is not None:
                self.power.finish()  # every simulator's report, as the one file uploaded
            if (words := self.stream.limit_words()) is not None:  # the log and the error say so
                self.stream.note([f"{PREFIX}{words}"])
                outcome = Outcome(outcome.state, f"{outcome.error}; {words}" if outcome.error else words)
            flusher.cancel()
            self.stream.finish()
            exit_code = self._exit_code()
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
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if self._proc is not None and self._proc.returncode is None:
                await self._proc.terminate()
            self.stream.finish()
            leave_scratch(
                self.plan.scratch,
                self.stream.log_path,
                keep=self.plan.keep_scratch,
                unsent=self.stream.unsent(),
                wanted=self._wanted,
            )

    async def _start_simulator(self) -> None:
        """The simulation's next simulator, with fresh markers and kernel watch."""
        self.markers = OutputMarkers()
        self.watch = self.simulation.new_watch(time.monotonic())
        self._forced = None
        if self.power is not None:
            self.power.start()
        self._proc = SimulatorProcess(
            self.simulation.argv(),
            self.plan.run_dir,
            simulator_environment(os.environ, self.plan.library_dir),
            self.plan.kill_grace,
            child_limits(self.plan.limits, self.plan.limits.cpu_left(self._cpu_used)),
        )
        self._cpu_at_start = children_cpu_seconds()
        await self._proc.start()

    async def _after_simulator(self) -> Outcome | None:
        """The simulator's output has ended: its exit, and what follows (None: the next one)."""
        assert self._proc is not None
        returncode = await self._proc.wait()
        self._cpu_used += children_cpu_seconds() - self._cpu_at_start  # (it has been waited for)
        reached = limit_reached(returncode, self.markers, self.plan.limits, self._cpu_used)
        if self.power is not None and self.watch is not None:
            self.stream.note(self.power.end(self.watch, self._owns))
        following = self.simulation.after_exit(returncode, self.markers, self.watch, self._forced, reached)
        self.stream.note(following.notes)
        if following.outcome is not None:
            outcome = following.outcome
            log.info(
                "simulator exited %d: %s%s",
                returncode,
                outcome.state,
                f" ({outcome.error})" if outcome.error else "",
            )
        return following.outcome

    def _exit_code(self) -> int:
        returncode = self._proc.returncode if self._proc is not None else None
        if returncode is None:
            return 1
        return returncode if returncode >= 0 else 128 - returncode

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
            await sim_outputs.upload_files(self.client, self.plan.run_dir, before)
            await sim_outputs.upload_log(self.client, self.stream.log_path)
            if (
                outcome.state == "succeeded"
                and self.plan.send_step_timeline
                and has_step_timeline(self.plan.trace_dir)
            ):
                assert self.plan.trace_dir is not None
                await sim_outputs.send_step_timeline(self.client, self.plan.trace_dir)
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

    # --- stopped early (cancel, signal, refused) --------------------------------------------

    async def _stopped(self, pump, flusher, sender, heartbeats) -> int:
        log.info("stopping the simulator: %s", self._stop_reason)
        if self._proc is not None:
            await self._proc.terminate()
        heartbeats.cancel()
        try:
            await asyncio.wait_for(pump, timeout=5)
        except (TimeoutError, Exception):
            pass
        flusher.cancel()
        self.stream.finish()
        # Send what is left of the output, briefly: the sim is over on the server anyway.
        try:
            await asyncio.wait_for(asyncio.shield(sender), timeout=5)
        except (TimeoutError, Exception):
            pass
        if self._exit_code_on_stop == EXIT_SIGNAL:
            try:
                ack = await self.client.heartbeat(
                    Heartbeat(state="failed", error=self._stop_reason, at=utcnow()), give_up_after=5
                )
                self._heard(ack)  # a launcher that stops a cancelled sim's worker signals it
            except (ApiRefused, ServerUnreachable):
                pass
        return self._exit_code_on_stop

    def _heard(self, ack: HeartbeatAck) -> None:
        """What an ack says of the sim's output: a cancelled sim's is no longer wanted."""
        if ack.cancel or ack.state == "cancelled":
            self._wanted = False

    # --- the tasks --------------------------------------------------------------------------

    def _on_lines(self, lines: list[str]) -> None:
        now = time.monotonic()
        feed, watch = self.markers.feed, self.watch
        finished = watch.finished_count if watch is not None else 0
        for line in lines:
            feed(line)
            if watch is not None:
                watch.feed(line, now)
        self.stream.write(lines)
        if self.power is not None and watch is not None and watch.finished_count != finished:
            self.stream.note(self.power.poll(watch, self._owns))  # a kernel's stats just passed

    def _owns(self, position: int) -> bool:
        """Whether the kernel at this trace position is the sim's own (not a warm-up kernel)."""
        segment = self.simulation.segment
        return segment is None or segment.owns(position)

    async def _power_poller(self) -> None:
        """A kernel's power block may come after its stats block passed: look again now and then."""
        assert self.power is not None
        while True:
            await asyncio.sleep(1.0)
            if self.watch is not None and self._proc is not None and self._proc.returncode is None:
                self.stream.note(self.power.poll(self.watch, self._owns))

    async def _pump(self) -> None:
        """One simulator's output, until it ends; with a kernel wall limit, watched."""
        assert self._proc is not None
        limit = self.plan.kernel_wall_limit_s
        if limit <= 0 or self.watch is None:
            await self._proc.pump(self._on_lines)
            return
        watchdog = asyncio.create_task(self._watchdog(limit), name="watchdog")
        try:
            await self._proc.pump(self._on_lines)
        finally:
            watchdog.cancel()
            await asyncio.gather(watchdog, return_exceptions=True)

    async def _watchdog(self, limit: float) -> None:
        """Stop the simulator when no kernel has launched or finished for `limit` seconds: a
        kernel that runs that long fails in the simulator (and the sim goes on past it); outside
        any kernel (a memcpy it cannot finish) the sim ends, failed."""
        assert self._proc is not None and self.watch is not None
        while True:
            await asyncio.sleep(min(1.0, limit / 4))
            watch = self.watch
            if time.monotonic() - watch.last_progress >= limit:
                where = "no kernel finished" if watch.running() is not None else "no kernel launched"
                self._forced = (
                    f"{where} for {limit:g} s (the kernel wall limit, CASCADE_KERNEL_WALL_LIMIT_S): "
                    "stopped by Cascade"
                )
                log.warning("%s", self._forced)
                await self._proc.terminate()
                return

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
            self._heard(ack)
            if ack.cancel:
                self.request_stop("cancelled", EXIT_OK)
                return
            if ack.state in TERMINAL_SIM_STATES:
                self._wanted = False  # finished on the server: nothing more of it is stored
                self.request_stop(f"the server already has this sim as {ack.state}", EXIT_OK)
                return
            await asyncio.sleep(self.plan.heartbeat_interval)


async def run_worker(plan: WorkerPlan, client: SimClient) -> int:
    return await Worker(plan, client).run()
