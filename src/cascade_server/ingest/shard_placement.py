"""Where a shard's parsed kernels go (issue 23), per chunk, in the parse worker.

A shard's log numbers its kernels from 0 in the order it simulated them, warm-up kernels first;
they are stored at their positions in the trace, so a run's kernels read as one sim's of the
whole trace. A sim of the whole trace has `first` 0 and no warm-up: nothing moves. The three
numbers are the sim's `shard_first`, `shard_warmup` and `shard_last` columns
(storage/shard_columns.py). A kernel a shard's log reports past its range (a log of more kernels
than the range has) is stored at its position, but it is not the shard's: it is never counted
done, so a shard never reads "15 of 10".
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ShardPlacement:
    first: int = 0  # the first kernel the sim owns, as a trace position
    warmup: int = 0  # kernels it simulates before `first`, whose stats are not its own
    last: int | None = None  # the last kernel the sim owns, as a trace position (None: to the end)

    def placed_index(self, local_index: int) -> int:
        """The trace position of the sim's `local_index`-th kernel."""
        return self.first - self.warmup + local_index

    def is_warmup(self, local_index: int) -> bool:
        return local_index < self.warmup

    def owned_done(self, parsed: int) -> int:
        """Kernels done as a shard counts them: its own, not its warm-up kernels."""
        return max(0, parsed - self.warmup)

    def owns(self, index: int) -> bool:
        """Whether the kernel at trace position `index` is not past the sim's range."""
        return self.last is None or index <= self.last

    def within_range(self, done: int) -> int:
        """`done` kernels as the shard counts them: at most the kernels its range has."""
        return done if self.last is None else min(done, max(0, self.last - self.first + 1))


WHOLE_TRACE = ShardPlacement()
