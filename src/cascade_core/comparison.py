"""The per-kernel comparison of a run's configs, one definition for the server's comparison
endpoint and the terminal UI's kernels view: kernels are matched by position (the i-th kernel each
sim finished, against the i-th real kernel), and each config's value is the median `sim_time_ns`
over its replicas that finished that kernel. Pure: models and the standard library only.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence

from cascade_core.models import ComparisonRow, KernelLaunch, KernelStat

# (kernel name, duration in ns) per real kernel, in kernel order; either may be unknown.
RealTiming = Sequence[tuple[str | None, float | None]]


def config_order(entry_configs: Iterable[str], sim_configs: Iterable[str] = ()) -> list[str]:
    """The run's configs in entry order without repeats, then any a sim names that no entry does."""
    return list(dict.fromkeys([*entry_configs, *sim_configs]))


def kernel_rows(
    configs: Sequence[str],
    config_of: Mapping[str, str],
    kernels: Iterable[KernelStat],
    real: RealTiming | None = None,
    names: Sequence[str] = (),
) -> list[ComparisonRow]:
    """Row i: the i-th kernel the sims finished against the i-th real kernel; per config the
    median `sim_time_ns` over the replicas that finished kernel i. `config_of` maps sim id to its
    config; kernels of other sims are left out. A kernel is named by its real name when known,
    else by the name the first sim (in `kernels` order) reported, else by `names` (the trace's
    kernel names by position, `trace_kernel_names`): a position no sim has finished yet, such as
    a shard's that is behind the shards after it. A kernel the simulator failed on has no time:
    the row names the configs it failed on (`failed`), and leaves it out."""
    by_position: dict[int, dict[str, list[float]]] = {}
    failed: dict[int, list[str]] = {}
    first_name: dict[int, str] = {}
    for stat in kernels:
        config = config_of.get(stat.sim_id)
        if config is None:
            continue
        if stat.kernel_name:
            first_name.setdefault(stat.kernel_index, stat.kernel_name)
        if stat.failed is not None and config not in failed.setdefault(stat.kernel_index, []):
            failed[stat.kernel_index].append(config)
        if stat.sim_time_ns is not None:
            by_position.setdefault(stat.kernel_index, {}).setdefault(config, []).append(stat.sim_time_ns)
    real = real or ()
    n_rows = max([len(real), *(index + 1 for index in first_name)], default=0)
    rows = []
    for index in range(n_rows):
        real_name, real_ns = real[index] if index < len(real) else (None, None)
        times = by_position.get(index, {})
        rows.append(
            ComparisonRow(
                kernel_index=index,
                kernel_name=real_name
                or first_name.get(index)
                or (names[index] if index < len(names) else ""),
                real_ns=real_ns,
                sim_ns={c: statistics.median(times[c]) if times.get(c) else None for c in configs},
                failed=[c for c in configs if c in failed.get(index, ())],
            )
        )
    return rows


def trace_kernel_names(launches: Iterable[KernelLaunch]) -> list[str]:
    """The trace's kernel names in trace order (by `kernel_id`): position i is `kernel_index` i."""
    return [launch.name for launch in sorted(launches, key=lambda launch: launch.kernel_id)]
