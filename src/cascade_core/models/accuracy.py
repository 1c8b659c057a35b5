"""`GET /api/accuracy`: how far each variant's simulated kernel times are from a trace's real ones."""

from __future__ import annotations

from pydantic import Field

from .common import Model


class AccuracyKernel(Model):
    """One kernel of an accuracy row: real against simulated time."""

    kernel_name: str
    real_ns: float
    sim_ns: float
    error_pct: float = Field(description="(sim_ns - real_ns) / real_ns * 100, signed, within ±1,000,000.")


class AccuracyPoint(Model):
    kernel_index: int
    kernel_name: str
    real_ns: float
    sim_ns: float


class AccuracyRow(Model):
    """`GET /api/accuracy` (not in the spec, an addition): how far one variant's simulated kernel
    times are from a trace's real ones, over every finished real (not replayed) sim of it."""

    trace_id: str
    gpu_config: str
    label: str = Field(description="The variant: the config's name when it ran without options.")
    options: dict[str, str] = Field(default_factory=dict)
    sims: int = Field(
        description="Finished real replicas of this variant on this trace (a replica split into shards counts once)."
    )
    runs: list[str] = Field(default_factory=list, description="The runs they belong to.")
    kernels: int = Field(description="Kernel rows compared: both real and simulated time known.")
    kernels_failed: int = Field(
        default=0,
        exclude_if=lambda v: v == 0,
        description="Kernels left out because the simulator failed on them (no simulated time).",
    )
    kernels_estimated: int = Field(
        default=0,
        exclude_if=lambda v: v == 0,
        description="Of `kernels`, those whose simulated time is estimated from a representative (sampling).",
    )
    kernels_unmatched: int = Field(
        default=0,
        exclude_if=lambda v: v == 0,
        description="Kernels left out because real timing names another kernel at their position "
        "(the comparison row's `sim_kernel_name`): their real time is not theirs.",
    )
    mape_pct: float | None = Field(
        description="Mean of |sim - real| / real * 100 over those rows, each at most 1,000,000%."
    )
    mean_error_pct: float | None = Field(description="Mean of (sim - real) / real * 100: the bias.")
    pearson_r: float | None = Field(description="Correlation of log real time and log simulated time.")
    worst: list[AccuracyKernel] = Field(
        default_factory=list, description="Up to 5 rows with the largest |error|."
    )
    step_wall_error_pct: float | None = Field(
        default=None,
        description="Traces with a step timeline: mean abs error of predicted step wall time, %.",
    )
    points: list[AccuracyPoint] | None = Field(
        default=None, description="Every compared kernel, with ?points=true (for a scatter)."
    )


class AccuracyQuery(Model):
    trace: str | None = None
    config: str | None = Field(default=None, description="A gpu_config or a variant label.")
    points: bool = False
