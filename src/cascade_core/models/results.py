"""The results downloads: one sim's (`GET /api/sims/{sim_id}/results`) and a whole run's
(`GET /api/runs/{run_id}/results`)."""

from __future__ import annotations

from .common import Model
from .configs import GpuConfig
from .kernels import Comparison, KernelStat
from .runs import RunSummary
from .sims import SimMetrics, SimSummary
from .traces import TraceDetail


class SimResults(Model):
    sim: SimSummary
    trace_id: str
    gpu_config: GpuConfig
    kernels: list[KernelStat]
    totals: SimMetrics


class RunResults(Model):
    run: RunSummary
    trace: TraceDetail
    sims: list[SimResults]
    comparison: Comparison
