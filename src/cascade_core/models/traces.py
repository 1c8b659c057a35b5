"""Traces: a trace's summary and detail with its kernel launches, and the trace list's query."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from .common import ListQuery, Model
from .sampling import SamplingInfo
from .states import TraceState


class KernelLaunch(Model):
    kernel_id: int
    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    instructions: int | None = None


class TraceSummary(Model):
    id: str
    state: TraceState
    error: str | None = None
    created_at: datetime
    updated_at: datetime
    model: str | None = None
    layers: list[str] = Field(default_factory=list)
    source_gpu: str | None = None
    trace_gpu_arch: str = "sm_90"
    suggested_sim_config: str | None = None
    real_gpu_config: str | None = None
    sample_sim_configs: list[str] = Field(default_factory=list)
    sample_set: str | None = None
    kernel_count: int = 0
    bytes: int = 0
    has_real_timing: bool = False
    # Not in the spec (an addition): why the trace's real_timing.json gives no real timing (not
    # JSON, no known duration, the kernels of another workload); absent when it has none or it
    # is used.
    real_timing_error: str | None = Field(default=None, exclude_if=lambda v: v is None)
    has_step_timeline: bool = False
    sample: bool = False


class TraceDetail(TraceSummary):
    metadata: dict[str, Any] | None = None
    kernels: list[KernelLaunch] = Field(default_factory=list)
    # Not in the spec (an addition): what each sampling method would simulate of this trace
    # (issue 33), found when it became ready; empty before, or when its kernels are unknown.
    sampling: list[SamplingInfo] = Field(default_factory=list, exclude_if=lambda v: not v)

    def summary(self) -> TraceSummary:
        return TraceSummary.model_validate(self.model_dump(exclude={"metadata", "kernels", "sampling"}))


class TraceListQuery(ListQuery):
    state: list[TraceState] = Field(default_factory=list, description="Only traces in these states.")
