"""Going on past a kernel the simulator fails on: which kernels each simulator process runs, and
when to give up. Pure: positions in, positions out.

A sim owns a contiguous range of the trace's kernels (all of them, or a shard's range). Its first
simulator runs the range after the sim's warm-up kernels (a shard's), as always. When a simulator
stops on a kernel (an abort, an assertion, a signal, GPGPU-Sim's deadlock report, the kernel wall
limit), that kernel is recorded as failed and a new simulator runs the rest of the range, after up
to `warmup_kernels` kernels just before it that did not fail, whose stats are dropped as a
shard's warm-up kernels are. Each restart starts strictly after the kernel that failed, so no
kernel is ever tried twice, and the sim ends after at most one simulator per kernel.

It stops early, saying why, when going on is pointless:
- `MAX_FAILS_IN_A_ROW` simulators in a row fail on the first kernel they run (a broken config or
  trace fails every kernel: it is found after a few quick failures);
- more than `MAX_FAILED_SHARE` of the sim's kernels failed (what is left would not describe the
  workload).
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_FAILS_IN_A_ROW = 3
MAX_FAILED_SHARE = 0.5
NAMED_IN_ERROR = 3  # failed kernels the sim's error names


@dataclass(frozen=True)
class Segment:
    """What one simulator process runs: warm-up kernels, then the owned range `first`..`last`
    (0-based trace positions)."""

    number: int  # 0 for the first simulator, then 1, 2, ... for each restart
    first: int
    last: int
    warmup: tuple[int, ...] = ()

    @property
    def positions(self) -> list[int]:
        """Every kernel this simulator runs, in trace order (its list's kernels)."""
        return [*self.warmup, *range(self.first, self.last + 1)]

    def owns(self, position: int) -> bool:
        return self.first <= position <= self.last


@dataclass(frozen=True)
class Failed:
    position: int
    reason: str  # the simulator's own words (the kernel's row carries them)
    name: str = ""
    short: str = ""  # a few words for the sim's error ("assertion failed: ...")


@dataclass
class SegmentPlan:
    first: int  # the sim's range of trace positions, inclusive
    last: int
    warmup_kernels: int
    warmup: tuple[int, ...] = ()  # the first simulator's warm-up kernels (a shard's)
    failed: list[Failed] = field(default_factory=list)
    bad_warmup: set[int] = field(default_factory=set)  # warm-up kernels a simulator failed on
    fails_in_a_row: int = 0  # simulators in a row that failed before finishing a kernel of their own

    @property
    def owned(self) -> int:
        return self.last - self.first + 1

    def start(self) -> Segment:
        return Segment(number=0, first=self.first, last=self.last, warmup=self.warmup)

    def after_failure(self, segment: Segment, failed: Failed, finished_owned: int) -> Segment | str | None:
        """Record `failed` (a kernel of `segment`, which finished `finished_owned` of its own
        kernels before) and say what comes next: the next segment, None when the failed kernel
        was the sim's last, or the reason to stop.

        A warm-up kernel that fails is not the sim's (its results came from an earlier
        simulator): the same range runs again without it."""
        assert failed.position in segment.positions, (failed, segment)
        self.fails_in_a_row = self.fails_in_a_row + 1 if finished_owned == 0 else 0
        if segment.owns(failed.position):
            self.failed.append(failed)
        else:
            self.bad_warmup.add(failed.position)
        if len(self.failed) > MAX_FAILED_SHARE * self.owned:
            return (
                f"stopped after {len(self.failed)} of {self.owned} kernels failed in the simulator "
                f"(more than {MAX_FAILED_SHARE:.0%})"
            )
        if self.fails_in_a_row >= MAX_FAILS_IN_A_ROW:
            return (
                f"stopped: the simulator failed on the first kernel it ran {self.fails_in_a_row} times "
                "in a row (a config or trace it cannot simulate?)"
            )
        first = failed.position + 1 if segment.owns(failed.position) else segment.first
        if first > self.last:
            return None
        bad = {f.position for f in self.failed} | self.bad_warmup
        warmup = [p for p in range(first - 1, -1, -1) if p not in bad][: self.warmup_kernels]
        return Segment(number=segment.number + 1, first=first, last=self.last, warmup=tuple(sorted(warmup)))

    def error(self) -> str | None:
        """The sim's `error` when it ends with failed kernels: how many, and the first few."""
        if not self.failed:
            return None
        count = len(self.failed)
        named = ", ".join(_named(f) for f in self.failed[:NAMED_IN_ERROR])
        more = f", and {count - NAMED_IN_ERROR} more" if count > NAMED_IN_ERROR else ""
        kernels = "kernel" if count == 1 else "kernels"
        return f"{count} of {self.owned} {kernels} failed in the simulator: {named}{more}"


def _named(failed: Failed) -> str:
    why = failed.short or failed.reason
    return f"#{failed.position + 1} ({why})" if len(why) <= 80 else f"#{failed.position + 1}"
