"""A log that goes on past kernels the simulator failed on (issue 30), as the parser reads it:
the worker's notes (cascade_core.log_notes) say which kernel failed and where a restarted
simulator's kernels go. Pure; part of the parser's saved state.

A restarted simulator (or a sampled sim's first) runs its own list: kernels of the sim, each after
warm-up kernels. Its warm-up kernels' blocks are dropped (not the sim's results; after a restart
the sim has them from an earlier simulator), its own are placed at their trace positions here,
and a failed kernel is a row of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cascade_core import log_notes

from .kernel import ParsedKernel


@dataclass(slots=True)
class Restarts:
    # The current simulator's list, when a note gave it: its kernels' trace positions in list
    # order, and which of them are warm-up kernels. None before any note.
    positions: tuple[int, ...] | None = None
    warmup: frozenset[int] = frozenset()
    restart_at: int = 0  # the parser's blocks finished when it began (its kernels count from there)
    dropped: int = 0  # blocks of a restart's warm-up kernels: not the sim's, not returned
    placed: int = 0  # blocks of a restart's own kernels (placed here)
    # The sim's own kernels done through notes, each counted once however often a log names it:
    # placed by a note, and failed in the simulator.
    placed_at: set[int] = field(default_factory=set)
    failed_at: set[int] = field(default_factory=set)
    # The sim's totals (gpu_tot_sim_cycle, gpu_tot_sim_insn) when the current simulator began, and
    # its own kernels' since: a new simulator counts from 0, and counts its warm-up kernels.
    base_cycle: float = 0.0
    base_insn: float = 0.0
    cycles: float = 0.0
    insns: float = 0.0

    def begin(self, note: log_notes.Restart, blocks_done: int, latest: dict[str, float | None]) -> None:
        self.positions = tuple(note.positions)
        self.warmup = frozenset(note.warmup)
        self.restart_at = blocks_done
        self.base_cycle = latest.get("gpu_tot_sim_cycle") or 0.0
        self.base_insn = latest.get("gpu_tot_sim_insn") or 0.0
        self.cycles = self.insns = 0.0

    def totals(self) -> dict[str, float | None]:
        """The sim's totals over its own kernels, every simulator's (warm-up kernels left out)."""
        cycle, insn = self.base_cycle + self.cycles, self.base_insn + self.insns
        return {
            "gpu_tot_sim_cycle": cycle,
            "gpu_tot_sim_insn": insn,
            "gpu_tot_ipc": insn / cycle if cycle else None,
        }

    @property
    def failed(self) -> int:
        return len(self.failed_at)

    @property
    def done(self) -> int:
        """The sim's own kernels these notes account for (placed or failed), each once."""
        return len(self.placed_at | self.failed_at)

    def failed_kernel(self, note: log_notes.KernelFailure) -> ParsedKernel:
        self.failed_at.add(note.kernel_index)
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
        """A noted simulator's kernels at their trace positions; its warm-up kernels dropped.
        Accel-Sim numbers a list's kernels from 1 (`kernel_launch_uid`): the uid says which
        kernel a block is (kernels on several streams finish out of order), and becomes the
        kernel's launch number in the whole trace, as a sim that never restarted reports it. A
        block without one is placed by its order."""
        if self.positions is None:
            return done
        kept = []
        for kernel in done:
            if kernel.placed:
                kept.append(kernel)
                continue
            uid = kernel.kernel_launch_uid
            index = uid - 1 if uid is not None and 0 < uid <= len(self.positions) else None
            if index is None:
                index = kernel.kernel_index - self.restart_at
            if index >= len(self.positions) or self.positions[index] in self.warmup:
                self.dropped += 1
                continue
            kernel.kernel_index, kernel.placed = self.positions[index], True
            kernel.kernel_launch_uid = kernel.kernel_index + 1
            self.placed += 1
            self.placed_at.add(kernel.kernel_index)
            self.cycles += kernel.gpu_sim_cycle or 0
            self.insns += kernel.gpu_sim_insn or 0
            kept.append(kernel)
        return kept

    def state(self) -> dict:
        return {
            "positions": None if self.positions is None else log_notes.ranges_text(self.positions),
            "warmup": log_notes.ranges_text(sorted(self.warmup)),
            "restart_at": self.restart_at,
            "dropped": self.dropped,
            "placed": self.placed,
            "placed_at": log_notes.ranges_text(sorted(self.placed_at)),
            "failed_at": log_notes.ranges_text(sorted(self.failed_at)),
            "totals": [self.base_cycle, self.base_insn, self.cycles, self.insns],
        }

    @classmethod
    def from_state(cls, state: dict) -> Restarts:
        """From a saved parser state (one saved before restarts existed has none); raises
        ValueError for values that cannot be."""
        positions, warmup = state.get("positions"), state.get("warmup") or ""
        counts = [state.get(key, 0) for key in ("restart_at", "dropped", "placed")]
        sets = [state.get(key) or "" for key in ("placed_at", "failed_at")]
        if not (positions is None or isinstance(positions, str)) or not isinstance(warmup, str):
            raise ValueError("positions and warmup must be kernel ranges")
        if not all(isinstance(x, int) and x >= 0 for x in counts):
            raise ValueError("restart_at, dropped and placed must be non-negative integers")
        if not all(isinstance(x, str) for x in sets):
            raise ValueError("placed_at and failed_at must be kernel ranges")
        totals = state.get("totals", [0.0] * 4)
        if not (
            isinstance(totals, list) and len(totals) == 4 and all(isinstance(x, (int, float)) for x in totals)
        ):
            raise ValueError("totals must be four numbers")
        return cls(
            None if positions is None else log_notes.parse_ranges(positions),
            frozenset(log_notes.parse_ranges(warmup)) if warmup else frozenset(),
            *counts,
            *(set(log_notes.parse_ranges(x)) if x else set() for x in sets),
            *(float(x) for x in totals),
        )
