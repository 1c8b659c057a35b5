"""Where a shard's parsed kernels go (issue 23), per chunk, in the parse worker.

A shard's log numbers its kernels from 0 in the order it simulated them, warm-up kernels first;
they are stored at their positions in the trace, so a run's kernels read as one sim's of the
whole trace. A sim of the whole trace has `first` 0 and no warm-up: nothing moves. The two
numbers are the sim's `shard_first` and `shard_warmup` columns (storage/shard_columns.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ShardPlacement:
    first: int = 0  # the first kernel the sim owns, as a trace position
    warmup: int = 0  # kernels it simulates before `first`, whose stats are not its own

    def placed_index(self, local_index: int) -> int:
        """The trace position of the sim's `local_index`-th kernel."""
        return self.first - self.warmup + local_index

    def is_warmup(self, local_index: int) -> bool:
        return local_index < self.warmup

    def owned_done(self, parsed: int) -> int:
        """Kernels done as a shard counts them: its own, not its warm-up kernels."""
        return max(0, parsed - self.warmup)


WHOLE_TRACE = ShardPlacement()
