"""Runs: a run's entries (a config, its replicas, shards and variant options), the body that
creates a run and the limits on its size, the run list's query, and a run's summary and detail."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import (
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from cascade_core.shard_plan import MAX_SHARDS, MAX_WARMUP_KERNELS

from .common import ListQuery, Model
from .sims import SimSummary
from .states import RunState, SimState
from .traces import TraceSummary

# The size of a run, checked by POST /api/runs (and rerun, retry) before anything is stored: a
# run's replicas of one entry (`count`), its entries, and its sims in all (the sum of count x
# shards over its entries). One POST of 100 entries x 64 x 15 shards made 96,000 sims and stalled
# the server for tens of seconds.
MAX_ENTRY_COUNT = 64
MAX_RUN_ENTRIES = 256
MAX_RUN_SIMS = 4096


def run_size_problem(entries: Sequence[RunEntry]) -> str | None:
    """Why a run of `entries` is too large, or None."""
    if len(entries) > MAX_RUN_ENTRIES:
        return f"a run has at most {MAX_RUN_ENTRIES:,} entries, not {len(entries):,}"
    sims = sum(entry.count * entry.shards for entry in entries)
    if sims > MAX_RUN_SIMS:
        return (
            f"a run makes at most {MAX_RUN_SIMS:,} sims (the sum of count x shards over its entries), "
            f"and this one would make {sims:,}: split it into several runs"
        )
    return None


class RunEntry(Model):
    # Unknown fields are refused, not ignored: a client that believes it sent an option must learn
    # that it was not applied. Strict: "2" or 2.0 is not a count.
    model_config = ConfigDict(extra="forbid")

    gpu_config: str
    count: int = Field(ge=1, le=MAX_ENTRY_COUNT, strict=True)
    # Not in the spec (additions a spec client never has to send): each replica split into
    # `shards` sims over contiguous kernel ranges, each after `warmup_kernels` warm-up kernels.
    shards: int = Field(
        default=1,
        ge=1,
        le=MAX_SHARDS,
        strict=True,
        description=(
            "Split each replica into this many sims, each simulating a contiguous range of the trace's "
            "kernels; the results are merged as if one sim had run the whole trace."
        ),
    )
    warmup_kernels: int = Field(
        default=1,
        ge=0,
        le=MAX_WARMUP_KERNELS,
        strict=True,
        description=(
            "Kernels each shard simulates just before its range to warm caches and DRAM rows; their "
            "stats stay in that sim's own results, marked as warm-up. A simulator started again past "
            "a failed kernel runs as many just before its next kernel, and drops their stats."
        ),
    )
    on_kernel_failure: Literal["continue", "stop"] = Field(
        default="continue",
        description=(
            "When real Accel-Sim stops on a kernel (an abort, an assertion, a signal, its deadlock "
            "report): `continue` records that kernel as failed, with the simulator's reason, and "
            "starts the simulator again on the sim's kernels after it, so the sim ends `succeeded` "
            "with results for every other kernel and an `error` naming the failed ones; `stop` "
            "ends the sim there, `failed`."
        ),
    )

    sampling: Literal["none", "identical", "stratified"] = Field(
        default="none",
        description=(
            "Simulate only representative kernels and estimate the rest from them: `identical` takes one "
            "kernel per set of kernels identical in the trace (name, grid, block, instruction count); "
            "`stratified` groups each kernel name by instruction count (and by real time, where the trace "
            "has it). Every kernel still gets a row; an estimated one names its representative "
            "(`estimated_from`). Real Accel-Sim only."
        ),
    )

    power: bool = Field(
        default=False,
        strict=True,
        description=(
            "Simulate power with AccelWattch: each kernel gets its average, maximum and minimum power, "
            "their components and its energy. Only configs with a power model (`power_model` in "
            "`GET /api/gpu-configs`); it takes about 2-3 times the simulation time. Real Accel-Sim only."
        ),
    )

    # Not in the spec (additions, optional, left out of responses when unset, so a spec client
    # sees no change): a config variant. See cascade_core/variants.py and POST /api/runs.
    options: dict[str, str] = Field(
        default_factory=dict,
        description="Simulator options given after the configs, name -> value: "
        '{"-gpgpu_n_clusters": "40"}. Each must be one the config and simulator know.',
    )
    label: str | None = Field(
        default=None,
        description="The variant's name wherever results group by config; defaults to "
        "the config plus its options (SM7_QV100[gpgpu_n_clusters=40]).",
    )

    @field_validator("options", mode="before")
    @classmethod
    def _numbers_are_values(cls, value: Any) -> Any:
        # {"-gpgpu_n_clusters": 40} means "40"; anything else non-text is refused by the type.
        if isinstance(value, dict):
            return {
                k: str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v
                for k, v in value.items()
            }
        return value

    @model_serializer(mode="wrap")
    def _spec_shape(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # An entry that uses no addition reads exactly as the spec's: a spec client sees no change.
        data: dict[str, Any] = handler(self)
        if self.shards == 1:
            data.pop("shards", None)
        if self.warmup_kernels == 1 and self.shards == 1:
            data.pop("warmup_kernels", None)
        if self.on_kernel_failure == "continue":
            data.pop("on_kernel_failure", None)
        if self.sampling == "none":
            data.pop("sampling", None)
        if not self.power:
            data.pop("power", None)
        if not data.get("options"):
            data.pop("options", None)
        if data.get("label") is None:
            data.pop("label", None)
        return data

    @property
    def variant(self) -> str:
        """The label results group this entry's sims by."""
        return self.label or self.gpu_config


class RunCreate(Model):
    model_config = ConfigDict(extra="forbid")  # `"dry_run": true` must not launch a run

    trace_id: str
    entries: list[RunEntry] = Field(min_length=1)


class RunListQuery(ListQuery):
    state: list[RunState] = Field(default_factory=list, description="Only runs in these states.")


class RunSummary(Model):
    id: str
    trace_id: str
    created_at: datetime
    state: RunState
    entries: list[RunEntry]
    sim_counts: dict[SimState, int]
    sample: bool = False
    replay: bool = False
    # Not in the spec (additions clients may ignore): when the first sim started (its first
    # `running` heartbeat), and when the run reached a terminal state (its last sim's
    # `finished_at`); null until then. The run took `finished_at - created_at`.
    started_at: datetime | None = None
    finished_at: datetime | None = None


class RunDetail(RunSummary):
    trace: TraceSummary
    sims: list[SimSummary]

    def summary(self) -> RunSummary:
        return RunSummary.model_validate(self.model_dump(exclude={"trace", "sims"}))
