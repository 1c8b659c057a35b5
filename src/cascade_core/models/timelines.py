"""Step timelines: what a simulator uploads (`POST /api/sims/{sim_id}/step-timeline`) and what
`GET /api/runs/{run_id}/step-timelines` answers for each sim."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from cascade_core.step_upload import shape_problem

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

    @model_validator(mode="after")
    def _readers_can_use_it(self) -> StepTimelineUpload:
        # Stored as sent, but only in a shape the readers (the Perfetto trace, the UI) can draw:
        # finite, bounded step times, unique step indexes, comparisons of steps it has.
        if problem := shape_problem(self.simulated, self.compare):
            raise ValueError(problem)
        return self
