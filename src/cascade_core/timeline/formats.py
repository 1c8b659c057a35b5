"""The files `cascade timeline import` writes next to a trace's `metadata.json`; any other
profiler can write them too (docs/guides/timelines.md, "The three files", documents them). Times in ns."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from cascade_core.step_kinds import StepKind


class MeasuredKernel(BaseModel):
    name: str = Field(description="The kernel's name as the profiler wrote it (usually demangled).")
    start_ns: int = Field(description="GPU start, ns after the first step's CPU start.")
    duration_ns: int
    stream: int
    correlation: int | None = Field(default=None, description="The launch's Kineto correlation id.")


class MeasuredStep(BaseModel):
    index: int = Field(description="0-based position among the steps.")
    name: str = Field(description="The step annotation, e.g. ProfilerStep#1009.")
    kind: StepKind = "step"
    cpu_start_ns: int = Field(description="The annotation's CPU start, ns after the first step's.")
    cpu_wall_ns: int = Field(description="The annotation's CPU duration.")
    kernels: list[MeasuredKernel] = Field(
        default_factory=list, description="Kernels launched during the step, in launch order."
    )


class CorrectedTimeline(BaseModel):
    """corrected_timeline.json: the measured steps."""

    format: Literal["cascade.corrected_timeline/1"] = "cascade.corrected_timeline/1"
    source: dict[str, str | int | float | None] = Field(default_factory=dict)
    steps: list[MeasuredStep]


class StepMapping(BaseModel):
    index: int
    name: str
    # One entry per kernel of the measured step, in its order: the trace's kernel_id, or None.
    kernel_ids: list[int | None]
    mapped: int
    unmapped: int


class KernelMapping(BaseModel):
    """kernel_mapping.json: each step's kernel launches aligned to the trace's kernels."""

    format: Literal["cascade.kernel_mapping/1"] = "cascade.kernel_mapping/1"
    trace_kernels: int = Field(description="How many kernels the trace has.")
    steps: list[StepMapping]
    unmapped_names: dict[str, int] = Field(
        default_factory=dict, description="Demangled name -> launches left unmapped, over every step."
    )


class RealKernel(BaseModel):
    kernel_id: int
    kernel_name: str
    duration_ns: float | None = Field(description="Median over the steps that mapped it; null if none did.")
    samples: int = 0


class RealTiming(BaseModel):
    """real_timing.json: per trace kernel its real duration (what `/comparison` reads)."""

    format: Literal["cascade.real_timing/1"] = "cascade.real_timing/1"
    source: dict[str, str | int | float | None] = Field(default_factory=dict)
    kernels: list[RealKernel]
