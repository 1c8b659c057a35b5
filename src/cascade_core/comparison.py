"""The per-kernel comparison of a run's configs, one definition for the server's comparison
endpoint, the accuracy report and the terminal UI's kernels view: kernels are matched by position
(the i-th kernel each sim finished, against the i-th real kernel), and each config's value is the
median `sim_time_ns` over its replicas that finished that kernel. A real time counts for a row only
when real timing names the kernel the sims ran there (`real_timing.same_kernel`); otherwise the row
says which kernel the sims ran (`sim_kernel_name`) and no accuracy figure pairs the two. Pure:
models and the standard library only.

`compare_rows` yields plain tuples, so a trace with hundreds of thousands of real kernels costs no
model per row: the server writes them as JSON a batch at a time (`row_doc`), the UI and the
accuracy report build models (`kernel_rows`) or read the tuples as they are.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import NamedTuple

from cascade_core.models import ComparisonRow, KernelLaunch, KernelStat
from cascade_core.real_timing import same_kernel

# (kernel name, duration in ns) per real kernel, in kernel order; either may be unknown.
RealTiming = Sequence[tuple[str | None, float | None]]


class RowValues(NamedTuple):
    """A ComparisonRow's fields, without the model."""

    kernel_index: int
    kernel_name: str
    real_ns: float | None
    sim_ns: dict[str, float | None]
    failed: list[str]
    sim_kernel_name: str | None  # set when real timing names another kernel (or none) here
    estimated: list[str] = []  # configs whose time here is estimated from a representative (sampling)

    def model(self) -> ComparisonRow:
        return ComparisonRow.model_construct(**self._asdict())

    def paired_real(self) -> float | None:
        """The real time accuracy may compare this row's simulated times with."""
        return None if self.sim_kernel_name is not None else self.real_ns


def config_order(entry_configs: Iterable[str], sim_configs: Iterable[str] = ()) -> list[str]:
    """The run's configs in entry order without repeats, then any a sim names that no entry does."""
    return list(dict.fromkeys([*entry_configs, *sim_configs]))


def compare_rows(
    configs: Sequence[str],
    config_of: Mapping[str, str],
    kernels: Iterable[KernelStat],
    real: RealTiming | None = None,
    names: Sequence[str] = (),
    *,
    simulated_only: bool = False,
) -> Iterator[RowValues]:
    """Row i: the i-th kernel the sims finished against the i-th real kernel; per config the
    median `sim_time_ns` over the replicas that finished kernel i. `config_of` maps sim id to its
    config; kernels of other sims are left out. A kernel is named by its real name when known,
    else by the name the first sim (in `kernels` order) reported. A kernel the simulator failed
    on has no time: the row names the configs it failed on (`failed`), and leaves it out. A row
    whose real kernel is not the one the sims ran (another name, or no name) keeps its real time
    and names the sims' kernel in `sim_kernel_name`. `simulated_only`: only rows some sim
    finished (the accuracy report's: real kernels no sim reached compare nothing)."""
    by_position: dict[int, dict[str, list[float]]] = {}
    failed: dict[int, list[str]] = {}
    estimated: dict[int, list[str]] = {}
    first_name: dict[int, str] = {}
    for stat in kernels:
        config = config_of.get(stat.sim_id)
        if config is None:
            continue
        if stat.kernel_name:
            first_name.setdefault(stat.kernel_index, stat.kernel_name)
        if stat.failed is not None and config not in failed.setdefault(stat.kernel_index, []):
            failed[stat.kernel_index].append(config)
        if stat.estimated_from is not None and config not in estimated.setdefault(stat.kernel_index, []):
            estimated[stat.kernel_index].append(config)
        if stat.sim_time_ns is not None and math.isfinite(stat.sim_time_ns):
            by_position.setdefault(stat.kernel_index, {}).setdefault(config, []).append(stat.sim_time_ns)
    real = real or ()
    positions: Iterable[int]
    if simulated_only:
        positions = sorted(index for index in {*first_name, *by_position, *failed} if index >= 0)
    else:
        positions = range(max([len(real), *(index + 1 for index in first_name)], default=0))
    for index in positions:
        real_name, real_ns = real[index] if index < len(real) else (None, None)
        sim_name = first_name.get(index)
        unmatched = index < len(real) and sim_name is not None and not same_kernel(real_name, sim_name)
        times = by_position.get(index, {})
        yield RowValues(
            kernel_index=index,
            # a position no sim has finished yet (a shard behind the shards after it): the trace's
            # own name for it (`names`, trace_kernel_names)
            kernel_name=real_name or sim_name or (names[index] if index < len(names) else ""),
            real_ns=real_ns,
            sim_ns={c: statistics.median(times[c]) if times.get(c) else None for c in configs},
            failed=[c for c in configs if c in failed.get(index, ())],
            sim_kernel_name=sim_name if unmatched else None,
            estimated=[c for c in configs if c in estimated.get(index, ())],
        )


def kernel_rows(
    configs: Sequence[str],
    config_of: Mapping[str, str],
    kernels: Iterable[KernelStat],
    real: RealTiming | None = None,
    names: Sequence[str] = (),
) -> list[ComparisonRow]:
    """`compare_rows` as models."""
    return [values.model() for values in compare_rows(configs, config_of, kernels, real, names)]


def row_doc(values: RowValues) -> dict[str, object]:
    """One row as `ComparisonRow.model_dump()` gives it for JSON (its additions left out when
    empty), without the model: a run on a trace of 300,000 real kernels answers in a second."""
    doc: dict[str, object] = {
        "kernel_index": values.kernel_index,
        "kernel_name": values.kernel_name,
        "real_ns": values.real_ns,
        "sim_ns": values.sim_ns,
    }
    if values.failed:
        doc["failed"] = values.failed
    if values.sim_kernel_name is not None:
        doc["sim_kernel_name"] = values.sim_kernel_name
    if values.estimated:
        doc["estimated"] = values.estimated
    return doc


def trace_kernel_names(launches: Iterable[KernelLaunch]) -> list[str]:
    """The trace's kernel names in trace order (by `kernel_id`): position i is `kernel_index` i."""
    return [launch.name for launch in sorted(launches, key=lambda launch: launch.kernel_id)]
