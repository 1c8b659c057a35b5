"""`CASCADE_LAUNCHER=local` (the default): one `cascade worker` subprocess per sim, here.

At most `slots` workers run at once; the rest wait in order and stay `pending`. Workers start
in their own session, so stopping or killing the server never takes them down: after a restart
`resume` watches the ones still running (by pid, no longer our children) and they keep
reporting. A worker that ends without a final heartbeat makes its sim `failed` with its exit
status (`events.exited`; the server ignores it for a sim that already finished).

Exits are noticed through a pidfd (Linux >= 5.3; works for children and non-children alike,
without threads), or by polling `/proc` where pidfds are unavailable. `subprocess.Popen` is used
rather than asyncio's subprocess transport because the transport kills its child when it is
closed or garbage-collected, and workers must outlive the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import signal
import subprocess
import sys
from collections import deque
from pathlib import Path
from typing import IO

from cascade_core.models import LauncherStatus

from ..datadir import private_dir, private_file
from .base import Launcher, LauncherEvents, SimSpec, record
from .environment import worker_environment

log = logging.getLogger(__name__)

KILL_GRACE_S = 10.0
POLL_INTERVAL_S = 0.5


def exit_message(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"worker killed by {name}"
    return f"worker exited with status {returncode}"


def _proc_state(pid: int) -> str | None:
    """The process's state letter from /proc, or None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    except OSError:
        return "?"
    return stat.rsplit(")", 1)[-1].split()[0]


def is_worker_of(pid: int, sim_id: str) -> bool:
    """Is `pid` alive and the worker of `sim_id`? Guards against a reused pid after a restart."""
    state = _proc_state(pid)
    if state is None or state in ("Z", "X"):
        return False
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return f"CASCADE_SIM_ID={sim_id}".encode() in environ.split(b"\0")


def _parse_pid(launcher_ref: str | None) -> int | None:
    try:
        return int(launcher_ref) if launcher_ref else None
    except ValueError:
        return None


class LocalLauncher(Launcher):
    name = "local"

    def __init__(
        self,
        events: LauncherEvents,
        slots: int,
        log_dir: Path | None = None,
        kill_grace: float = KILL_GRACE_S,
    ) -> None:
        super().__init__(events)
        self.slots = max(1, slots)
        self.log_dir = log_dir
        self.kill_grace = kill_grace
        self._queue: deque[SimSpec] = deque()
        self._running: dict[str, int] = {}  # sim_id -> pid of its worker (ours or adopted)
        self._children: dict[str, subprocess.Popen] = {}
        self._tasks: set[asyncio.Task] = set()
        self._lock = asyncio.Lock()
        self._closed = False

    # --- the Launcher interface -------------------------------------------------------------

    async def submit(self, sims: list[SimSpec]) -> None:
        self._queue.extend(sims)
        await self._fill_slots()

    async def resume(self, pending: list[SimSpec], active: list[tuple[SimSpec, str | None]]) -> None:
        for spec, ref in active:
            pid = _parse_pid(ref)
            if pid is not None and is_worker_of(pid, spec.sim_id):
                log.info("sim %s: worker %d still running; watching it", spec.sim_id, pid)
                self._running[spec.sim_id] = pid
                self._spawn(self._watch(spec.sim_id, pid, None))
            else:
                await self._report_exit(spec.sim_id, None, "worker is gone (found after a server restart)")
        await self.submit(pending)

    async def cancel(self, sim_id: str, launcher_ref: str | None) -> None:
        for spec in list(self._queue):
            if spec.sim_id == sim_id:
                self._queue.remove(spec)
        pid = self._running.get(sim_id)
        if pid is None:
            pid = _parse_pid(launcher_ref)
            if pid is None or not is_worker_of(pid, sim_id):
                return
        self._spawn(self._stop(sim_id, pid))

    async def close(self) -> None:
        """Stop watching; the workers go on running and report to the next server."""
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._queue.clear()

    def status(self) -> LauncherStatus:
        return LauncherStatus(
            name="local", slots=self.slots, running=len(self._running), queued=len(self._queue)
        )

    # --- internals --------------------------------------------------------------------------

    async def _fill_slots(self) -> None:
        async with self._lock:
            while self._queue and len(self._running) < self.slots and not self._closed:
                spec = self._queue.popleft()
                try:
                    proc = self._start(spec)
                except OSError as exc:
                    log.error("sim %s: cannot start a worker: %s", spec.sim_id, exc)
                    await self._report_exit(
                        spec.sim_id, None, f"cannot start a worker: {exc.strerror or exc}"
                    )
                    continue
                self._running[spec.sim_id] = proc.pid
                self._children[spec.sim_id] = proc
                self._spawn(self._watch(spec.sim_id, proc.pid, proc))
                # A task: a record a full disk refuses waits for space without holding the slots.
                self._spawn(
                    record(
                        f"sim {spec.sim_id}: recording the launch",
                        functools.partial(self.events.launching, spec.sim_id, str(proc.pid)),
                    )
                )

    def _start(self, spec: SimSpec) -> subprocess.Popen:
        # The sims that share this host at once: a worker's default memory limit is its share.
        env = worker_environment(os.environ, {**spec.env, "CASCADE_LOCAL_SLOTS": str(self.slots)})
        output: int | IO[bytes] = subprocess.DEVNULL
        handle = None
        if self.log_dir is not None:
            private_dir(self.log_dir)
            handle = os.fdopen(private_file(self.log_dir / f"{spec.sim_id}.log"), "ab")
            output = handle
        try:
            return subprocess.Popen(
                [sys.executable, "-m", "cascade_worker"],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: a server kill does not reach it
                close_fds=True,
            )
        finally:
            if handle is not None:
                handle.close()  # the child has its own copy

    async def _watch(self, sim_id: str, pid: int, proc: subprocess.Popen | None) -> None:
        await _wait_for_exit(pid, proc)
        returncode = proc.wait() if proc is not None else None
        self._running.pop(sim_id, None)
        self._children.pop(sim_id, None)
        if returncode is None:
            message = "worker exited (its status is unknown after a server restart)"
        else:
            message = exit_message(returncode)
            if returncode < 0:  # killed by a signal: report it as a shell does (SIGKILL -> 137)
                returncode = 128 - returncode
        await self._report_exit(sim_id, returncode, message)
        await self._fill_slots()

    async def _report_exit(self, sim_id: str, returncode: int | None, message: str) -> None:
        await record(
            f"sim {sim_id}: recording the worker's exit",
            functools.partial(self.events.exited, sim_id, returncode, message),
        )

    async def _stop(self, sim_id: str, pid: int) -> None:
        """TERM the worker's process group (the worker and its simulator), KILL after the grace."""
        _signal_group(pid, signal.SIGTERM)
        proc = self._children.get(sim_id)
        try:
            await asyncio.wait_for(_wait_for_exit(pid, proc), timeout=self.kill_grace)
        except TimeoutError:
            log.warning("sim %s: worker %d ignored SIGTERM; killing it", sim_id, pid)
            _signal_group(pid, signal.SIGKILL)

    def _spawn(self, coro) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _signal_group(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)  # the worker leads its own session, so its pgid is its pid


async def _wait_for_exit(pid: int, proc: subprocess.Popen | None) -> None:
    """Returns once `pid` has ended (a child is reaped by its Popen afterwards)."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    if pidfd is not None:
        loop = asyncio.get_running_loop()
        ended = loop.create_future()
        loop.add_reader(pidfd, lambda: None if ended.done() else ended.set_result(None))
        try:
            await ended
        finally:
            loop.remove_reader(pidfd)
            os.close(pidfd)
        return
    while True:
        if proc is not None:
            if proc.poll() is not None:
                return
        elif _proc_state(pid) in (None, "Z", "X"):
            return
        await asyncio.sleep(POLL_INTERVAL_S)
