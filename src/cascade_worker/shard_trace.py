"""How a shard says which it is, at the top of its log. Its kernel list is kernel_list.py's."""

from __future__ import annotations

from cascade_core.models import ShardInfo


def describe(shard: ShardInfo) -> str:
    """The line the worker puts at the top of the sim's log (kernels as 1-based trace positions)."""
    first, last = shard.kernel_first + 1, shard.kernel_last + 1
    owned = f"kernel {first}" if first == last else f"kernels {first}-{last}"
    if shard.warmup_kernels:
        w_first, w_last = shard.kernel_first - shard.warmup_kernels + 1, shard.kernel_first
        warm = f"kernel {w_first}" if w_first == w_last else f"kernels {w_first}-{w_last}"
        tail = f", after warm-up {warm}, whose stats are this sim's own, not the run's"
    else:
        tail = ", with no warm-up"
    return f"[cascade] shard {shard.index + 1} of {shard.count}: {owned} of the trace{tail}"
