"""Leave cleanly when the terminal goes away or we are told to stop, even if the UI is stuck.

Why a dedicated thread and not a signal handler: when the terminal disappears (SSH dropped, tmux
killed) Textual's main thread can block for ever. Its output goes through a bounded queue drained
by a writer thread; once that thread stops draining (a write to the dead terminal, or the SIGCONT
that comes with a hangup restarting the driver from inside a signal handler), the next write
blocks the event loop on the queue's lock. Python and asyncio signal handlers only run when the
main thread makes progress, so a handler-based exit can never happen.

So SIGHUP and SIGTERM are blocked in every thread and one daemon thread takes them with
`sigtimedwait` (it also notices a hung-up terminal on its own: `tcgetattr` fails with EIO). It asks
the UI to exit; if the UI has not returned within a grace period, or the caller has not finished
its cleanup soon after, it kills the process groups it was given (`os.killpg`: `cascade serve`
and its rclone) and leaves with `os._exit`. On that path it takes no lock the stuck code may
hold and never writes to the terminal.
"""

from __future__ import annotations

import errno
import os
import signal
import termios
import threading
import time
from collections.abc import Callable

STOP_SIGNALS = frozenset({signal.SIGHUP, signal.SIGTERM})
GRACE_S = 5.0  # for the UI to return after being asked to exit
CLEANUP_S = 20.0  # then for the caller's own cleanup (stopping its server politely)
KILL_GRACE_S = 5.0  # between SIGTERM and SIGKILL to the process groups on the emergency path
POLL_S = 0.5  # how often the terminal is checked


def exit_on_signal(signum: int, _frame: object) -> None:
    """Python-level handler: leave through the normal `finally` clauses (before the UI runs)."""
    raise SystemExit(128 + signum)


def block_stop_signals() -> None:
    """Block SIGHUP/SIGTERM in the calling thread (threads it starts later inherit the mask)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)


def terminal_gone(fd: int | None) -> bool:
    """True if `fd` was a terminal that has since hung up (its ioctls then fail with EIO)."""
    if fd is None:
        return False
    try:
        termios.tcgetattr(fd)
    except termios.error as exc:
        return bool(exc.args) and exc.args[0] in (errno.EIO, errno.ENXIO, errno.EBADF)
    return False


def kill_process_groups(pids: list[int], grace_s: float) -> None:
    """SIGTERM each process group, reap the leaders for up to `grace_s`, then SIGKILL the rest.

    Only system calls and time.sleep: safe while other threads hold any Python-level lock."""
    alive = []
    for pid in pids:
        try:
            os.killpg(pid, signal.SIGTERM)
            alive.append(pid)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + grace_s
    while alive and time.monotonic() < deadline:
        for pid in list(alive):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not our child, or already reaped elsewhere
                done = pid if not _exists(pid) else 0
            if done:
                alive.remove(pid)
        time.sleep(0.05)
    for pid in pids:  # the whole group: rclone and friends, even if the leader is gone
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ExitGuard:
    """Turns SIGHUP/SIGTERM or a hung-up terminal into an exit that always happens.

    Lifecycle: `start()` in the main thread before the UI (and after any subprocess whose signal
    mask must stay clear is started); `protect(pid)` for each process group to kill if the normal
    path is stuck; `set_request_exit(fn)` while the UI runs (fn must be thread-safe);
    `ui_returned()` once the UI is gone; `finished()` once the caller's cleanup is done.
    """

    def __init__(
        self,
        tty_fd: int | None = None,
        *,
        grace_s: float = GRACE_S,
        cleanup_s: float = CLEANUP_S,
        kill_grace_s: float = KILL_GRACE_S,
        poll_s: float = POLL_S,
    ) -> None:
        self.tty_fd = tty_fd
        self.grace_s = grace_s
        self.cleanup_s = cleanup_s
        self.kill_grace_s = kill_grace_s
        self.poll_s = poll_s
        self._groups: list[int] = []
        self._request_exit: Callable[[int], object] = _interrupt_main
        self._ui_returned = threading.Event()
        self._finished = threading.Event()
        self.thread: threading.Thread | None = None

    @staticmethod
    def for_this_terminal() -> ExitGuard:
        fd = next((fd for fd in (0, 1, 2) if _isatty(fd)), None)
        return ExitGuard(tty_fd=fd)

    def protect(self, pid: int) -> None:
        self._groups.append(pid)

    def set_request_exit(self, request: Callable[[int], object]) -> None:
        self._request_exit = request

    def ui_returned(self) -> None:
        # From now on the main thread is in our own cleanup code: nothing more to ask of it.
        self._request_exit = lambda _signum: None
        self._ui_returned.set()

    def finished(self) -> None:
        self._finished.set()

    def start(self) -> ExitGuard:
        for signum in STOP_SIGNALS:
            signal.signal(signum, exit_on_signal)  # what interrupt_main runs before the UI
        block_stop_signals()
        self.thread = threading.Thread(target=self._run, daemon=True, name="cascade-exit-guard")
        self.thread.start()
        return self

    # --- the guard thread ---------------------------------------------------------------------

    def _run(self) -> None:
        signum = self._wait_for_trigger()
        try:
            self._request_exit(signum)
        except Exception:  # noqa: BLE001 - the loop may be closed already; the deadline still holds
            pass
        cleaned_up = self._ui_returned.wait(self.grace_s) and self._finished.wait(self.cleanup_s)
        if not cleaned_up:
            kill_process_groups(self._groups, self.kill_grace_s)
            os._exit(128 + signum)
        # Cleaned up: the process is on its way out. Should interpreter shutdown hang (a
        # non-daemon thread stuck on the dead terminal), leave anyway.
        time.sleep(self.grace_s)
        os._exit(128 + signum)

    def _wait_for_trigger(self) -> int:
        while True:
            info = signal.sigtimedwait(STOP_SIGNALS, self.poll_s)
            if info is not None:
                return info.si_signo
            if terminal_gone(self.tty_fd):
                return signal.SIGHUP


def _interrupt_main(signum: int) -> None:
    # Before the UI runs the main thread is in plain Python (starting the server): raise
    # SystemExit there (the `exit_on_signal` handler) so its `finally` clauses stop the server.
    import _thread

    _thread.interrupt_main(signal.Signals(signum))


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False
