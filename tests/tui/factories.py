"""Builders for API models used by the TUI's unit and widget tests (plain data, no server)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from cascade_core.models import (
    KernelStat,
    RunDetail,
    RunEntry,
    SimMetrics,
    SimSummary,
    TraceSummary,
)

T0 = datetime(2026, 11, 8, 9, 0, 0, tzinfo=UTC)


def trace(**kw) -> TraceSummary:
    base: dict[str, Any] = dict(
        id="demo",
        state="ready",
        created_at=T0,
        updated_at=T0,
        model="facebook/opt-125m",
        trace_gpu_arch="sm_86",
        suggested_sim_config="SM86_RTX3070",
        kernel_count=6,
        bytes=16_890_250,
    )
    base.update(kw)
    return TraceSummary(**base)


def sim(sim_id: str = "sim-000000000001", **kw) -> SimSummary:
    base: dict[str, Any] = dict(
        id=sim_id,
        run_id="run-000000000001",
        gpu_config="SM86_RTX3070",
        replica=0,
        state="running",
        created_at=T0,
        started_at=T0,
        last_heartbeat_at=T0 + timedelta(seconds=5),
        kernels_done=2,
        kernels_total=6,
        current_kernel="_Z10dot_kernelIdEvPKT_S2_PS0_i",
        latest=SimMetrics(
            gpu_tot_sim_cycle=76713.0,
            gpu_tot_sim_insn=26560256.0,
            gpu_tot_ipc=346.2289,
            sim_rate_ips=510774.0,
        ),
    )
    base.update(kw)
    return SimSummary(**base)


def run(sims: list[SimSummary], **kw) -> RunDetail:
    configs: dict[str, int] = {}
    for s in sims:
        configs[s.gpu_config] = configs.get(s.gpu_config, 0) + 1
    counts: dict[str, int] = {}
    for s in sims:
        counts[s.state] = counts.get(s.state, 0) + 1
    base: dict[str, Any] = dict(
        id="run-000000000001",
        trace_id="demo",
        created_at=T0,
        state="active",
        entries=[RunEntry(gpu_config=c, count=n) for c, n in configs.items()],
        sim_counts=counts,
        trace=trace(),
        sims=sims,
    )
    base.update(kw)
    return RunDetail(**base)


def kstat(
    sim_id: str, index: int, ns: float | None, name: str = "_Z11init_kernelIdEvPT_S1_S1_S0_S0_S0_", **kw
) -> KernelStat:
    return KernelStat(
        sim_id=sim_id,
        kernel_index=index,
        kernel_name=name,
        gpu_sim_cycle=None if ns is None else int(ns),
        sim_time_ns=ns,
        **kw,
    )


def kstats(times: dict[str, list[float | None]], **kw) -> list[KernelStat]:
    """Kernel stats by sim: each sim id's simulated times, kernel 0 first."""
    return [
        kstat(sim_id, index, ns, **kw) for sim_id, values in times.items() for index, ns in enumerate(values)
    ]
