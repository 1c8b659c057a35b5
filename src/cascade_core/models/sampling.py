"""Kernel sampling's figures: what a sampled sim simulates of its part of the trace, and what a
method would save on a trace (issue 33; cascade_core/sampling.py computes them)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .common import Model


class SamplingInfo(Model):
    """What a sampled sim simulates of the trace, and how well its totals estimate the whole (not
    in the spec, an addition; issue 33)."""

    method: Literal["identical", "stratified"]
    kernels: int = Field(description="The trace's kernels this sim's results cover (simulated or estimated).")
    kernels_simulated: int = Field(description="Of them, the representatives it simulates.")
    instructions: int | None = Field(description="Their warp instructions (null when a count is unknown).")
    instructions_simulated: int | None = Field(description="Of them, the representatives'.")
    error_pct: float = Field(
        description="The bound stated for its total, in % (cascade_core/sampling.py says how it is found)."
    )
