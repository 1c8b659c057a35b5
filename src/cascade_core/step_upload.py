"""The shape a sim's step timeline must have to be stored (`POST /api/sims/{id}/step-timeline`):
what the server's readers use of it (the Perfetto trace's step slices, the UI's step chart),
checked once on the way in so that nothing accepted can break them later. Every other field
(`kernels`, `requests`, the summary's figures) travels as the simulator sent it.

Pure: pydantic only."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from cascade_core.step_kinds import StepKind

MAX_STEPS = 1_000_000
# A step longer than a day, or an error beyond a billion percent, is corrupt: past these the
# readers' arithmetic overflows or prints numbers no one can read.
MAX_STEP_NS = 86_400e9
MAX_ERROR_PCT = 1e9

StepNs = Annotated[float, Field(ge=0, le=MAX_STEP_NS, strict=True, allow_inf_nan=False)]
ErrorPct = Annotated[float, Field(ge=-MAX_ERROR_PCT, le=MAX_ERROR_PCT, strict=True, allow_inf_nan=False)]
StepIndex = Annotated[int, Field(ge=0, lt=MAX_STEPS, strict=True)]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class SimulatedStep(_Open):
    index: StepIndex
    name: str = Field(default="step", max_length=1000)
    kind: StepKind = "step"
    wall_ns: StepNs
    gpu_busy_ns: StepNs | None = None


class SimulatedShape(_Open):
    steps: list[SimulatedStep] = Field(max_length=MAX_STEPS)
    summary: dict[str, Any]

    @model_validator(mode="after")
    def _indexes_are_unique(self) -> SimulatedShape:
        indexes = [step.index for step in self.steps]
        if len(set(indexes)) != len(indexes):
            raise ValueError("two steps have the same index")
        return self


class ComparedStep(_Open):
    index: StepIndex
    real_wall_ns: StepNs | None = None
    sim_wall_ns: StepNs | None = None
    wall_error_pct: ErrorPct | None = None


class CompareShape(_Open):
    steps: list[ComparedStep] = Field(default_factory=list, max_length=MAX_STEPS)


def shape_problem(simulated: Any, compare: Any) -> str | None:
    """Why this upload cannot be stored, in one line naming the first bad field; None if it can."""
    try:
        sim = SimulatedShape.model_validate(simulated)
        if compare is not None:
            compared = CompareShape.model_validate(compare)
            known = {step.index for step in sim.steps}
            if stray := sorted({step.index for step in compared.steps} - known):
                return f"compare.steps names step index {stray[0]}, which simulated.steps does not have"
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in error["loc"])
        which = "simulated" if not isinstance(exc.title, str) or exc.title == "SimulatedShape" else "compare"
        return f"{which}{'.' + where if where else ''}: {error['msg']}"
    return None
