"""How a shard lives in the `sims` table (migration 6), issue 23.

A shard owns kernels shard_first..shard_last (0-based trace positions, inclusive) after
shard_warmup warm-up kernels; its parsed kernels are stored at their trace positions (the
ingest service places them: ingest/shard_placement.py), so a run's kernels read as one sim's
of the whole trace. A sim of the whole trace has shard_first 0 and no warm-up: nothing moves."""

from __future__ import annotations

from typing import Any

from cascade_core.models import ShardInfo
from cascade_core.shard_plan import ShardRange

INSERT_COLUMNS = ("shard_index", "shard_count", "shard_first", "shard_last", "shard_warmup")

# The rule `shared.shard_merge.is_owned` applies, for the queries that read a run's kernels (kernels JOIN
# sims): the shard's own kernels, of sims still part of their run.
OWNED_SQL = (
    "kernels.kernel_index >= sims.shard_first"
    " AND (sims.shard_last IS NULL OR kernels.kernel_index <= sims.shard_last)"
    " AND sims.retried_by IS NULL"
)


def insert_values(shard: ShardRange | None) -> tuple[Any, ...]:
    if shard is None:
        return (None, None, 0, None, 0)
    return (shard.index, shard.count, shard.first, shard.last, shard.warmup)


def shard_from_row(row: Any) -> ShardInfo | None:
    if row["shard_count"] is None:
        return None
    return ShardInfo(
        index=row["shard_index"],
        count=row["shard_count"],
        kernel_first=row["shard_first"],
        kernel_last=row["shard_last"],
        warmup_kernels=row["shard_warmup"],
    )
