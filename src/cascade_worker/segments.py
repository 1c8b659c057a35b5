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
- `MAX_FAILS_IN_A_ROW` simulators in a row fail on the first kernel they run, on different kernels
  (a broken config or trace fails every kernel: it is found after a few quick failures); when it is
  one kernel repeated (a training step's reduce kernel, three times at its start), only after
  `MAX_SAME_FAILS_IN_A_ROW`;
- more than `MAX_FAILED_SHARE` of the sim's kernels failed (what is left would not describe the
  workload).
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_FAILS_IN_A_ROW = 3
# The same kernel failing first again and again is a trace's repeated kernel, not a broken config:
# those stop the sim only after this many in a row.
MAX_SAME_FAILS_IN_A_ROW = 10
MAX_FAILED_SHARE = 0.5
NAMED_IN_ERROR = 3  # failed kernels the sim's error names


@dataclass(frozen=True)
class Segment:
    """What one simulator process runs: the sim's kernels `owned` (0-based trace positions, in
    order), each after its warm-up kernels `warmup` whose stats are dropped."""

    number: int  # 0 for the first simulator, then 1, 2, ... for each restart
    owned: tuple[int, ...]
    warmup: tuple[int, ...] = ()

    @property
    def positions(self) -> list[int]:
        """Every kernel this simulator runs, in trace order (its list's kernels)."""
        return sorted({*self.owned, *self.warmup})

    def owns(self, position: int) -> bool:
        return position in self.owned


def warmups(owned: tuple[int, ...], count: int, bad: set[int]) -> tuple[int, ...]:
    """For each owned kernel, the `count` kernels just before it in the trace that did not fail
    (an owned one among them runs anyway; the others are warm-up kernels)."""
    mine, warm = set(owned), set()
    for position in owned:
        taken, before = 0, position - 1
        while taken < count and before >= 0:
            if before not in bad:
                if before not in mine:
                    warm.add(before)
                taken += 1
            before -= 1
    return tuple(sorted(warm))


@dataclass(frozen=True)
class Failed:
    position: int
    reason: str  # the simulator's own words (the kernel's row carries them)
    name: str = ""
    short: str = ""  # a few words for the sim's error ("assertion failed: ...")


@dataclass
class SegmentPlan:
    owned: tuple[int, ...]  # every kernel the sim owns, in trace order (a range, or a sample)
    warmup_kernels: int
    sampled: bool = False  # a sample: its log says where its kernels go from the start
    failed: list[Failed] = field(default_factory=list)
    bad_warmup: set[int] = field(default_factory=set)  # warm-up kernels a simulator failed on
    fails_in_a_row: int = 0  # simulators in a row that failed before finishing a kernel of their own
    names_in_a_row: list[str] = field(default_factory=list)  # the kernels those failed on

    def start(self) -> Segment:
        return Segment(0, self.owned, warmups(self.owned, self.warmup_kernels, set()))

    def after_failure(self, segment: Segment, failed: Failed, finished_owned: int) -> Segment | str | None:
        """Record `failed` (a kernel of `segment`, which finished `finished_owned` of its own
        kernels before) and say what comes next: the next segment, None when the failed kernel
        was the sim's last, or the reason to stop. Every kernel before the failed one had
        finished (kernel_watch.py), so the next segment is the owned kernels after it.

        A warm-up kernel that fails is not the sim's (its results came from an earlier
        simulator): the same kernels run again without it."""
        assert failed.position in segment.positions, (failed, segment)
        self.fails_in_a_row = self.fails_in_a_row + 1 if finished_owned == 0 else 0
        self.names_in_a_row = (
            [*self.names_in_a_row, failed.name][-self.fails_in_a_row :] if self.fails_in_a_row else []
        )
        if segment.owns(failed.position):
            self.failed.append(failed)
        else:
            self.bad_warmup.add(failed.position)
        rest = tuple(p for p in segment.owned if p > failed.position)
        if len(self.failed) > MAX_FAILED_SHARE * len(self.owned):
            return (
                f"stopped after {len(self.failed)} of {len(self.owned)} kernels failed in the simulator "
                f"(more than {MAX_FAILED_SHARE:.0%})"
            )
        different = len(set(self.names_in_a_row)) > 1 or not all(self.names_in_a_row)
        if self.fails_in_a_row >= (MAX_FAILS_IN_A_ROW if different else MAX_SAME_FAILS_IN_A_ROW):
            return (
                f"stopped: the simulator failed on the first kernel it ran {self.fails_in_a_row} times "
                "in a row (a config or trace it cannot simulate?)"
            )
        if not rest:
            return None
        bad = {f.position for f in self.failed} | self.bad_warmup
        return Segment(segment.number + 1, rest, warmups(rest, self.warmup_kernels, bad))

    def error(self) -> str | None:
        """The sim's `error` when it ends with failed kernels: how many, and the first few."""
        if not self.failed:
            return None
        count = len(self.failed)
        named = ", ".join(_named(f) for f in self.failed[:NAMED_IN_ERROR])
        more = f", and {count - NAMED_IN_ERROR} more" if count > NAMED_IN_ERROR else ""
        kernels = "kernel" if count == 1 else "kernels"
        return f"{count} of {len(self.owned)} {kernels} failed in the simulator: {named}{more}"


def _named(failed: Failed) -> str:
    why = failed.short or failed.reason
    return f"#{failed.position} ({why})" if len(why) <= 80 else f"#{failed.position}"
