"""The run-state reducer: a snapshot, then each event, applied to a plain model of one run.

No Textual and no I/O: the SSE worker applies events here as they arrive and the screen's render
timer takes the accumulated changes (`take_changes`) a few times a second, so widgets are never
touched once per event. Tests drive it directly with `cascade_core.models` events.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from cascade_core.models import (
    KernelEvent,
    KernelPowerEvent,
    KernelStat,
    LogEvent,
    RunDetail,
    RunSummary,
    SimEvent,
    SimSummary,
    SnapshotEvent,
    run_state,
)

# A pending log buffer for the watched sim is capped so a UI that stops draining (a modal open,
# a suspended terminal) cannot grow memory without bound; the pane keeps only its tail anyway.
MAX_PENDING_LOG_LINES = 200_000


@dataclass
class Changes:
    """What changed since the last `take_changes()`."""

    reset: bool = False  # a snapshot replaced everything: rebuild rows, refetch the log tail
    sims: set[str] = field(default_factory=set)  # sim ids whose summary changed
    kernels: bool = False  # a kernel finished (or the snapshot brought kernels)
    # new chunks of the watched sim, one list per `log` event (chunk boundaries let the screen
    # line them up with a log tail it fetched meanwhile, see `loglines.merge_live`)
    log_chunks: list[list[str]] = field(default_factory=list)
    log_pending: int = 0  # lines in `log_chunks`
    log_dropped: int = 0  # watched-sim lines dropped because the buffer was full (the log pane marks it)

    @property
    def log_lines(self) -> list[str]:
        return [line for chunk in self.log_chunks for line in chunk]

    @property
    def any(self) -> bool:
        return self.reset or bool(self.sims) or self.kernels or bool(self.log_chunks)


class RunModel:
    """One run as the UI sees it: its summary, sims, finished kernels and the watched sim's log."""

    def __init__(self) -> None:
        self.run: RunDetail | None = None
        self.sims: dict[str, SimSummary] = {}
        # sim id -> kernel_index -> stat, with the full `stats` map dropped (30 KB each).
        self.kernels: dict[str, dict[int, KernelStat]] = {}
        self.snapshots = 0  # how many snapshots were applied (1 + reconnects)
        self.events = 0
        self.log_lines_seen: Counter[str] = Counter()  # lines received per sim since the snapshot
        self.watched: str | None = None
        self._changes = Changes()

    # --- applying ------------------------------------------------------------------------------

    def apply(self, event: SnapshotEvent | SimEvent | LogEvent | KernelEvent | KernelPowerEvent) -> None:
        self.events += 1
        if isinstance(event, SnapshotEvent):
            self._apply_snapshot(event)
        elif isinstance(event, SimEvent):
            self._apply_sim(event.sim)
        elif isinstance(event, LogEvent):
            self._apply_log(event)
        elif isinstance(event, KernelEvent):
            self._apply_kernel(event.stat)
        elif isinstance(event, KernelPowerEvent):
            self._apply_power(event)
        else:  # pragma: no cover - RunEvent is a closed union
            raise TypeError(f"not a run event: {type(event).__name__}")

    def _apply_snapshot(self, event: SnapshotEvent) -> None:
        self.snapshots += 1
        self.run = event.run
        self.sims = {sim.id: sim for sim in event.run.sims}
        self.kernels = {}
        for stat in event.kernels:
            self._store_kernel(stat)
        self.log_lines_seen = Counter()
        # Log lines between the previous stream and this snapshot are lost: the screen refetches
        # the watched sim's tail when it sees `reset`, so drop what is pending.
        self._changes = Changes(reset=True, sims=set(self.sims), kernels=True)

    def _apply_sim(self, sim: SimSummary) -> None:
        if self.run is not None and sim.run_id != self.run.id:
            return
        if sim.retry_of is not None and self.sims.pop(sim.retry_of, None) is not None:
            # A failed shard retried in place: its new sim takes its row, and its partial
            # kernels are no longer the run's (as the server's snapshot would say).
            self.kernels.pop(sim.retry_of, None)
            self._changes.kernels = True
        self.sims[sim.id] = sim
        self._changes.sims.add(sim.id)

    def _apply_log(self, event: LogEvent) -> None:
        self.log_lines_seen[event.sim_id] += len(event.lines)
        if event.sim_id != self.watched:
            return
        changes = self._changes
        changes.log_chunks.append(list(event.lines))
        changes.log_pending += len(event.lines)
        while changes.log_pending > MAX_PENDING_LOG_LINES and len(changes.log_chunks) > 1:
            dropped = changes.log_chunks.pop(0)
            changes.log_pending -= len(dropped)
            changes.log_dropped += len(dropped)

    def _apply_kernel(self, stat: KernelStat) -> None:
        if stat.sim_id not in self.sims:
            return
        self._store_kernel(stat)
        self._changes.kernels = True

    def _apply_power(self, event: KernelPowerEvent) -> None:
        """A power sim's kernels' power, after their stats (a kernel not seen yet is skipped: the
        next snapshot brings it with its power)."""
        kernels = self.kernels.get(event.sim_id, {})
        for at in event.kernels:
            stat = kernels.get(at.kernel_index)
            if stat is not None:
                energy = at.power.energy_j(stat.sim_time_ns)
                kernels[at.kernel_index] = stat.model_copy(update={"power": at.power, "energy_j": energy})
                self._changes.kernels = True

    def _store_kernel(self, stat: KernelStat) -> None:
        if stat.stats:
            stat = stat.model_copy(update={"stats": {}})
        self.kernels.setdefault(stat.sim_id, {})[stat.kernel_index] = stat

    # --- watching a sim's log ---------------------------------------------------------------------

    def watch(self, sim_id: str | None) -> None:
        """Collect log lines of `sim_id` from now on (the screen has just fetched its tail)."""
        self.watched = sim_id
        self._changes.log_chunks = []
        self._changes.log_pending = 0
        self._changes.log_dropped = 0

    def take_log_chunks(self) -> list[list[str]]:
        """Take only the watched sim's pending log chunks, leaving other changes for the tick."""
        chunks = self._changes.log_chunks
        self._changes.log_chunks = []
        self._changes.log_pending = 0
        self._changes.log_dropped = 0  # the tail just fetched has them
        return chunks

    # --- reading ------------------------------------------------------------------------------

    def take_changes(self) -> Changes:
        changes, self._changes = self._changes, Changes()
        return changes

    @property
    def has_snapshot(self) -> bool:
        return self.run is not None

    def sim_counts(self) -> dict[str, int]:
        return dict(Counter(sim.state for sim in self.sims.values()))

    def state(self) -> str:
        return (
            run_state(sim.state for sim in self.sims.values())
            if self.sims
            else (self.run.state if self.run else "active")
        )

    def summary(self) -> RunSummary | None:
        """The run summary with state and counts derived from the sims as they are now."""
        if self.run is None:
            return None
        return RunSummary.model_validate(
            {
                **self.run.model_dump(exclude={"trace", "sims"}),
                "state": self.state(),
                "sim_counts": self.sim_counts(),
            }
        )

    def all_kernels(self) -> list[KernelStat]:
        return [stat for per_sim in self.kernels.values() for stat in per_sim.values()]

    def is_finished(self) -> bool:
        return self.run is not None and self.state() != "active"
