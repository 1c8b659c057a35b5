"""Step timelines: what a simulator uploads (`POST /api/sims/{sim_id}/step-timeline`) and what
`GET /api/runs/{run_id}/step-timelines` answers for each sim."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from cascade_core.step_upload import spec_problem

from .common import Model


class SimStepTimeline(Model):
    sim_id: str
    gpu_config: str
    replica: int
    simulated: dict[str, Any]
    compare: dict[str, Any] | None = None
    label: str | None = Field(
        default=None, description="Not in the spec: the sim's variant (see SimSummary)."
    )


class StepTimelineUpload(Model):
    simulated: dict[str, Any]
    compare: dict[str, Any] | None = None

    @field_validator("simulated")
    @classmethod
    def _has_steps_and_a_summary(cls, simulated: dict[str, Any]) -> dict[str, Any]:
        # The spec's check, and only it: stored as sent; every reader takes any shape.
        if problem := spec_problem(simulated):
            raise ValueError(problem)
        return simulated
