"""One simulator process: started in the sim's working directory within its limits (rlimits set
in the child before it runs, host_limits.py), its stdout and stderr read as lines, stopped with
TERM and then KILL."""

from __future__ import annotations

import asyncio
import logging
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from .chunks import LineSplitter

log = logging.getLogger("cascade_worker")

READ_SIZE = 64 * 1024


class SimulatorProcess:
    def __init__(
        self,
        argv: list[str],
        cwd: Path,
        env: Mapping[str, str],
        kill_grace: float,
        limits: Callable[[], None] | None = None,
    ) -> None:
        """`limits`: run in the child before the simulator (host_limits.child_limits)."""
        self.argv, self.cwd, self.env, self.kill_grace = argv, cwd, dict(env), kill_grace
        self.limits = limits
        self._proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        """Raises OSError when the program cannot be started."""
        try:
            self._proc = await self._exec()
        except subprocess.SubprocessError as exc:  # the limits could not be set in the child
            raise OSError(f"cannot set the simulator's limits: {exc}") from None
        log.info("simulator started (pid %d): %s", self._proc.pid, " ".join(self.argv))

    async def _exec(self) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            *self.argv,
            cwd=self.cwd,
            env=self.env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            preexec_fn=self.limits,
        )

    @property
    def returncode(self) -> int | None:
        return None if self._proc is None else self._proc.returncode

    async def pump(self, on_lines: Callable[[list[str]], None]) -> None:
        """Hand every line of the output to `on_lines`, in order, until the output ends. A line
        `on_lines` fails on is logged, and the output is still read to its end: a reader that
        stopped would leave the simulator blocked on a full pipe, and the sim with it, for ever."""
        assert self._proc is not None and self._proc.stdout is not None
        splitter = LineSplitter()
        failed = False
        while True:
            data = await self._proc.stdout.read(READ_SIZE)
            try:
                on_lines(splitter.feed(data) if data else splitter.finish())
            except Exception:  # noqa: BLE001 - a bug in reading one line must not hang the sim
                if not failed:
                    log.exception("a line of the simulator's output could not be handled")
                failed = True
            if not data:
                return

    async def wait(self) -> int:
        assert self._proc is not None
        return await self._proc.wait()

    async def terminate(self) -> None:
        """TERM, then KILL after the grace period."""
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        try:
            proc.terminate()
            await asyncio.wait_for(proc.wait(), timeout=self.kill_grace)
        except TimeoutError:
            log.warning("simulator ignored SIGTERM for %.0f s; killing it", self.kill_grace)
            proc.kill()
            await proc.wait()
        except ProcessLookupError:
            pass
