"""A log that goes on past kernels the simulator failed on (issue 30), as the parser reads it:
the worker's notes (cascade_core.log_notes) say which kernel failed and where a restarted
simulator's kernels go. Pure; part of the parser's saved state.

A restarted simulator runs its own list: its warm-up kernels, then `first`..`last` of the trace.
Its warm-up kernels' blocks are dropped (the sim has their results from an earlier simulator),
its own are placed at their trace positions here, and a failed kernel is a row of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from cascade_core import log_notes

from .kernel import ParsedKernel


@dataclass(slots=True)
class Restarts:
    restart: tuple[int, int, int] | None = None  # (first, last, warmup) of the current restart
    restart_at: int = 0  # the parser's blocks finished when it began (its kernels count from there)
    dropped: int = 0  # blocks of a restart's warm-up kernels: not the sim's, not returned
    placed: int = 0  # blocks of a restart's own kernels (placed here)
    failed: int = 0  # kernels the simulator failed on (a failure note each)

    def begin(self, note: log_notes.Restart, blocks_done: int) -> None:
        self.restart = (note.first, note.last, note.warmup)
        self.restart_at = blocks_done

    def failed_kernel(self, note: log_notes.KernelFailure) -> ParsedKernel:
        self.failed += 1
        return ParsedKernel(
            kernel_index=note.kernel_index,
            kernel_name=note.kernel_name,
            kernel_launch_uid=None,
            gpu_sim_cycle=None,
            gpu_sim_insn=None,
            gpu_ipc=None,
            sim_time_ns=None,
            placed=True,
            failed=note.reason,
        )

    def place(self, done: list[ParsedKernel]) -> list[ParsedKernel]:
        """A restarted simulator's kernels at their trace positions; its warm-up kernels
        dropped. Accel-Sim numbers a list's kernels from 1 (`kernel_launch_uid`): the uid says
        which kernel a block is (kernels on several streams finish out of order), and becomes
        the kernel's launch number in the whole trace, as a sim that never restarted reports
        it. A block without one is placed by its order."""
        if self.restart is None:
            return done
        first, last, warmup = self.restart
        kept = []
        for kernel in done:
            if kernel.placed:
                kept.append(kernel)
                continue
            uid = kernel.kernel_launch_uid
            local = uid - 1 if uid is not None and 0 < uid <= warmup + last - first + 1 else None
            if local is None:
                local = kernel.kernel_index - self.restart_at
            if local < warmup:
                self.dropped += 1
                continue
            kernel.kernel_index, kernel.placed = first + local - warmup, True
            kernel.kernel_launch_uid = kernel.kernel_index + 1
            self.placed += 1
            kept.append(kernel)
        return kept

    def state(self) -> dict:
        return {
            "restart": None if self.restart is None else list(self.restart),
            "restart_at": self.restart_at,
            "dropped": self.dropped,
            "placed": self.placed,
            "failed": self.failed,
        }

    @classmethod
    def from_state(cls, state: dict) -> Restarts:
        """From a saved parser state (one saved before restarts existed has none); raises
        ValueError for values that cannot be."""
        restart = state.get("restart")
        counts = [state.get(key, 0) for key in ("restart_at", "dropped", "placed", "failed")]
        if restart is not None and not (
            isinstance(restart, list) and len(restart) == 3 and all(isinstance(x, int) for x in restart)
        ):
            raise ValueError("restart must be null or three integers")
        if not all(isinstance(x, int) and x >= 0 for x in counts):
            raise ValueError("restart_at, dropped, placed and failed must be non-negative integers")
        return cls(None if restart is None else (restart[0], restart[1], restart[2]), *counts)
