"""What a worker runs, simulator after simulator: real Accel-Sim on the sim's own kernel list,
going on past the kernels it fails on (segments.py), or one stand-in replay.

After each simulator exits, `after_exit` says what its exit means: the sim's outcome, or the next
simulator to start; and the lines of Cascade's own for the log (cascade_core.log_notes), which
tell the server which kernel failed and where the next simulator's kernels go.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from cascade_core import log_notes
from cascade_core.trace_kernels import header_lines, parse_trace_header

from .kernel_list import TraceList
from .kernel_watch import KernelWatch
from .outcome import Outcome, OutputMarkers, classify, kernel_failure
from .segments import Failed, Segment, SegmentPlan

log = logging.getLogger("cascade_worker")


@dataclass
class Next:
    """What follows a simulator's exit: `notes` for the log, then the sim's `outcome`, or (None)
    the next simulator."""

    notes: list[str] = field(default_factory=list)
    outcome: Outcome | None = None


class Simulation:
    def __init__(
        self,
        argv: list[str],
        trace_list: TraceList | None = None,
        plan: SegmentPlan | None = None,
        lists_dir: Path | None = None,
        go_on: bool = True,
    ) -> None:
        """`argv`: the simulator's command line. With a `trace_list` and a `plan` (real
        Accel-Sim), each simulator runs its segment's own list, written into `lists_dir`, and
        with `go_on` a failed kernel starts the next segment."""
        self._argv = argv
        self.trace_list, self.plan, self.lists_dir, self.go_on = trace_list, plan, lists_dir, go_on
        self.segment: Segment | None = plan.start() if plan is not None else None
        if self.segment is not None:
            self._write_list(self.segment)

    def argv(self) -> list[str]:
        return list(self._argv)

    def first_notes(self) -> list[str]:
        """The log's first line of Cascade's own, for a sampled sim: its kernels are here and
        there in the trace, so the log says where they go (a range's go where its sim's shard
        columns say)."""
        if self.plan is None or self.segment is None or not self.plan.sampled:
            return []
        return [log_notes.restart_line(log_notes.Restart(0, self.segment.owned, self.segment.warmup))]

    def new_watch(self, now: float) -> KernelWatch | None:
        if self.segment is None or self.trace_list is None:
            return None
        positions = self.segment.positions
        return KernelWatch(positions, [self.trace_list.names[p] for p in positions], now)

    def _write_list(self, segment: Segment) -> None:
        assert self.trace_list is not None and self.lists_dir is not None
        name = "kernelslist.g" if segment.number == 0 else f"kernelslist-restart-{segment.number}.g"
        path = self.trace_list.write(segment.positions, self.lists_dir, name)
        self._argv[self._argv.index("-trace") + 1] = str(path)

    def after_exit(
        self,
        returncode: int,
        markers: OutputMarkers,
        watch: KernelWatch | None,
        forced: str | None = None,
        limit: str | None = None,
    ) -> Next:
        """`forced`: why the worker stopped the simulator itself (the kernel wall limit);
        `limit`: the sim's limit the simulator reached (sim_limits.py), which ends the sim: it is
        no kernel's failure, and the next simulator would reach it too."""
        outcome = classify(returncode, markers)
        plan, segment = self.plan, self.segment
        if limit is not None:
            ended = Outcome("failed", limit)
            return Next(
                [f"{log_notes.PREFIX}the sim stops: {limit}"], _with_failed(ended, plan) if plan else ended
            )
        if plan is None or segment is None or watch is None:
            return Next(outcome=outcome)
        if outcome.state == "succeeded":
            return Next(outcome=Outcome("succeeded", plan.error()))
        reason = forced or kernel_failure(returncode, markers)
        position = watch.running()
        if forced and position is None:  # stopped outside any kernel: no kernel to blame
            return Next(outcome=_with_failed(Outcome("failed", forced), plan))
        if not self.go_on or reason is None or position is None:
            # no kernel's failure (or not asked to go on): the sim ends as the simulator did
            return Next(outcome=_with_failed(outcome, plan))
        short = forced.split(" (", 1)[0] if forced else (outcome.error or "")
        name = watch.name_at(position) or self._name(position)
        failed = Failed(position, log_notes.one_line(reason), name, short)
        owned_done = sum(1 for p in watch.finished_positions() if segment.owns(p))
        if segment.owns(position):
            note = log_notes.failure_line(log_notes.KernelFailure(position, failed.reason, failed.name))
        else:
            note = f"[cascade] warm-up kernel #{position} failed in the simulator: {failed.reason}"
        log.warning("kernel #%d failed in the simulator: %s", position, failed.reason)
        following = plan.after_failure(segment, failed, owned_done)
        if following is None:  # it was the sim's last kernel
            return Next([note], Outcome("succeeded", plan.error()))
        if isinstance(following, str):  # a bound: going on is pointless
            return Next([note], Outcome("failed", f"{following}; {plan.error()}"))
        try:
            self._write_list(following)
        except (OSError, ValueError) as exc:
            return Next(
                [note], Outcome("failed", f"cannot write the next kernel list: {exc}; {plan.error()}")
            )
        self.segment = following
        restart = log_notes.Restart(following.number, following.owned, following.warmup)
        return Next([note, log_notes.restart_line(restart)])

    def _name(self, position: int) -> str:
        """A kernel that never launched: its name from its trace file's header."""
        assert self.trace_list is not None
        path = self.trace_list.path.parent / self.trace_list.names[position]
        try:
            launch = parse_trace_header(header_lines(path, path.name))
        except Exception:  # a damaged header (or .xz): the name is a nicety, never a failure
            return ""
        return launch.name if launch is not None else ""


def _with_failed(outcome: Outcome, plan: SegmentPlan) -> Outcome:
    """An ending that is no kernel's failure still says which kernels failed before it."""
    failed = plan.error()
    if not failed:
        return outcome
    return Outcome(outcome.state, f"{outcome.error}; {failed}" if outcome.error else failed)
