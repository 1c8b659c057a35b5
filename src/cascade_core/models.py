"""The API contract: every request and response type, the state machines, and `run_state()`.

This module is imported by the server, the worker and the terminal UI, so it must stay light:
pydantic and the standard library only (never aiohttp, aiosqlite or boto3).
Field descriptions follow `spec/003-...`, section "Types".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from cascade_core.shard_plan import MAX_SHARDS, MAX_WARMUP_KERNELS
from cascade_core.step_upload import shape_problem

TraceState = Literal["uploading", "processing", "ready", "failed"]
SimState = Literal["pending", "launching", "running", "lost", "succeeded", "failed", "cancelled"]
RunState = Literal["active", "succeeded", "partial", "failed", "cancelled"]

SIM_STATES: tuple[SimState, ...] = (
    "pending",
    "launching",
    "running",
    "lost",
    "succeeded",
    "failed",
    "cancelled",
)
TERMINAL_SIM_STATES: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})

# Every move a sim may make; anything not listed is ignored (spec 003, "Sim states").
SIM_TRANSITIONS: dict[str, frozenset[str]] = {
    "pending": frozenset({"launching", "failed", "cancelled"}),
    "launching": frozenset({"running", "lost", "succeeded", "failed", "cancelled"}),
    "running": frozenset({"lost", "succeeded", "failed", "cancelled"}),
    "lost": frozenset({"running", "succeeded", "failed", "cancelled"}),
    "succeeded": frozenset(),
    "failed": frozenset(),
    "cancelled": frozenset(),
}

# A file a sim uploads: letters, digits, '.', '_' and '-', 1..128 characters, not '.' or '..'.
FILE_NAME_PATTERN = r"^(?!\.\.?$)[A-Za-z0-9._-]{1,128}$"

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


# SQLite stores integers in 64 bits: a larger number must be a 422, not an overflow in the database.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def can_transition(current: str, target: str) -> bool:
    return target in SIM_TRANSITIONS.get(current, frozenset())


def run_state(sim_states: Iterable[str]) -> RunState:
    """Derive a run's state from its sims' states (never stored)."""
    states = list(sim_states)
    if not states or any(s not in TERMINAL_SIM_STATES for s in states):
        return "active"
    if all(s == "succeeded" for s in states):
        return "succeeded"
    if "succeeded" in states:
        return "partial"
    if all(s == "failed" for s in states):
        return "failed"
    return "cancelled"


def utcnow() -> datetime:
    return datetime.now(UTC)


class Model(BaseModel):
    # NaN and infinities appear in Accel-Sim stats; JSON has no literal for them, so they travel
    # as the strings "NaN", "Infinity" and "-Infinity" (valid JSON, and a `str` in `float | str`).
    model_config = ConfigDict(ser_json_inf_nan="strings")


class GpuConfig(Model):
    name: str = Field(description='Accel-Sim tested-cfgs directory name, e.g. "SM90_H100".')
    arch: str = Field(description='For example, "sm_90".')
    core_clock_mhz: float = Field(description="First value of -gpgpu_clock_domains in gpgpusim.config.")


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
    has_step_timeline: bool = False
    sample: bool = False


class TraceDetail(TraceSummary):
    metadata: dict[str, Any] | None = None
    kernels: list[KernelLaunch] = Field(default_factory=list)

    def summary(self) -> TraceSummary:
        return TraceSummary.model_validate(self.model_dump(exclude={"metadata", "kernels"}))


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
            "stats stay in that sim's own results, marked as warm-up."
        ),
    )

    # Not in the spec (additions, optional, left out of responses when unset, so a spec client
    # sees no change): a config variant. See shared/variants.py and POST /api/runs.
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
            data.pop("warmup_kernels", None)
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


class ListQuery(Model):
    """Query parameters of `GET /api/runs` and `GET /api/traces`: the newest `limit` items, of the
    given states only (any state when empty). Unknown parameters are ignored, as on every other
    route: a cache-buster or the `?token=` a browser adds must not break a list."""

    # le: SQLite's LIMIT is a signed 64-bit integer; a larger one overflows in the driver.
    limit: int | None = Field(None, ge=1, le=2**63 - 1, description="At most this many, newest first.")


class RunListQuery(ListQuery):
    state: list[RunState] = Field(default_factory=list, description="Only runs in these states.")


class TraceListQuery(ListQuery):
    state: list[TraceState] = Field(default_factory=list, description="Only traces in these states.")


class SimMetrics(Model):
    gpu_tot_sim_cycle: float | None = None
    gpu_tot_sim_insn: float | None = None
    gpu_tot_ipc: float | None = None
    sim_rate_ips: float | None = None


class ShardInfo(Model):
    """Which part of a sharded replica a sim simulates (not in the spec, an addition)."""

    index: int = Field(description="0-based shard index within its replica.")
    count: int = Field(description="How many shards the replica has.")
    kernel_first: int = Field(
        description="The first kernel the shard owns: its 0-based trace position (kernel_index)."
    )
    kernel_last: int = Field(description="The last kernel the shard owns (inclusive).")
    warmup_kernels: int = Field(
        description=(
            "Kernels simulated just before kernel_first to warm the simulator; their stats are not the shard's own."
        )
    )


class SimSummary(Model):
    id: str
    run_id: str
    gpu_config: str
    replica: int
    state: SimState
    error: str | None = None
    launcher_ref: str | None = None
    # Not in the spec (an addition clients may ignore): what a scheduler says of the sim's job
    # while it waits or runs, e.g. "PENDING (Resources)" or "RUNNING" from Slurm; None otherwise.
    launcher_state: str | None = None
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    last_heartbeat_at: datetime | None = None
    exit_code: int | None = None
    kernels_done: int = 0
    kernels_total: int = 0
    current_kernel: str | None = None
    latest: SimMetrics = Field(default_factory=SimMetrics)
    log_tail: list[str] = Field(default_factory=list)
    # Not in the spec (additions clients may ignore): the part of the trace a shard simulates
    # (null for a sim of the whole trace), and the failed sim this one retries in place.
    shard: ShardInfo | None = Field(default=None, exclude_if=lambda v: v is None)
    retry_of: str | None = Field(default=None, exclude_if=lambda v: v is None)
    # Not in the spec (additions clients may ignore): the variant the sim runs. `label` is the
    # config's name for a sim without options, so grouping by label groups by config.
    options: dict[str, str] = Field(default_factory=dict, description="Simulator options after the configs.")
    label: str = Field(default="", description="The variant: its entry's label, or gpu_config.")

    @model_validator(mode="after")
    def _label_defaults_to_config(self) -> SimSummary:
        if not self.label:
            self.label = self.gpu_config
        return self


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


class SimulatorInfo(Model):
    """Which simulator new sims run (in `GET /api/launcher` and `cascade simulator status`)."""

    kind: Literal["stand-in", "installed", "accelsim-dir"] = Field(
        description="stand-in: the replay of a recording; installed: built by `cascade simulator install`; "
        "accelsim-dir: the checkout CASCADE_ACCELSIM_DIR names."
    )
    path: str | None = Field(default=None, description="The Accel-Sim tree (null for the stand-in).")
    framework_commit: str | None = None
    gpgpu_sim_commit: str | None = None
    built_at: str | None = Field(default=None, description="installed: when it was built (ISO 8601, UTC).")
    configs: int = Field(default=0, description="GPU configs this simulator has.")
    smoke_passed: bool | None = Field(
        default=None, description="installed: its smoke run passed; null when unknown."
    )
    smoke_detail: str | None = None
    problem: str | None = Field(default=None, description="Why real sims cannot run from it here, or null.")
    hint: str | None = Field(default=None, description="What to do to simulate for real, or null.")


class LauncherStatus(Model):
    """`GET /api/launcher` (not in the spec, an addition): where new sims go and how busy it is
    now, so a client can say how many of a new run's sims start at once and how many wait."""

    name: Literal["local", "manual", "slurm"]
    slots: int | None = Field(
        default=None, description="local: sims run at once (CASCADE_LOCAL_SLOTS); else null."
    )
    running: int = Field(
        default=0, description="local: workers running now; slurm: Cascade's jobs Slurm runs now."
    )
    queued: int = Field(
        default=0,
        description="local: sims waiting for a slot; slurm: Cascade's jobs waiting in Slurm's queue.",
    )
    partition: str | None = Field(
        default=None, description="slurm: the partition jobs go to (null: the cluster's default)."
    )
    simulator: SimulatorInfo | None = Field(default=None, description="Which simulator new sims run.")


class RunDetail(RunSummary):
    trace: TraceSummary
    sims: list[SimSummary]

    def summary(self) -> RunSummary:
        return RunSummary.model_validate(self.model_dump(exclude={"trace", "sims"}))


class KernelStat(Model):
    sim_id: str
    kernel_index: int
    kernel_name: str
    kernel_launch_uid: int | None = None
    gpu_sim_cycle: int | None = None
    gpu_sim_insn: int | None = None
    gpu_ipc: float | None = None
    sim_time_ns: float | None = None
    stats: dict[str, float | str] = Field(default_factory=dict)
    # Not in the spec (an addition): a shard's warm-up kernel, in that sim's own results only.
    warmup: bool = Field(default=False, exclude_if=lambda v: not v)


class ComparisonRow(Model):
    kernel_index: int
    kernel_name: str
    real_ns: float | None = None
    sim_ns: dict[str, float | None]


class Comparison(Model):
    has_real_timing: bool
    configs: list[str]
    rows: list[ComparisonRow]


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


class AccuracyKernel(Model):
    """One kernel of an accuracy row: real against simulated time."""

    kernel_name: str
    real_ns: float
    sim_ns: float
    error_pct: float = Field(description="(sim_ns - real_ns) / real_ns * 100, signed.")


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
    mape_pct: float | None = Field(description="Mean of |sim - real| / real * 100 over those rows.")
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


class ConfigOption(Model):
    """An option a GPU config's simulator knows, with the config's value (`GET /api/gpu-configs/{name}/options`)."""

    name: str
    value: str
    description: str = ""
    in_config: bool = Field(default=False, description="The config's own files set it.")


class SimStepTimeline(Model):
    sim_id: str
    gpu_config: str
    replica: int
    simulated: dict[str, Any]
    compare: dict[str, Any] | None = None
    label: str | None = Field(
        default=None, description="Not in the spec: the sim's variant (see SimSummary)."
    )


class SimFile(Model):
    name: str
    size: int
    content_type: str
    created_at: datetime


class RunFile(SimFile):
    sim_id: str
    gpu_config: str
    replica: int
    label: str | None = Field(
        default=None, description="Not in the spec: the sim's variant (see SimSummary)."
    )


# --- events on GET /api/runs/{run_id}/events -------------------------------------------------


class SnapshotEvent(Model):
    type: Literal["snapshot"] = "snapshot"
    run: RunDetail
    kernels: list[KernelStat]


class SimEvent(Model):
    type: Literal["sim"] = "sim"
    sim: SimSummary


class LogEvent(Model):
    type: Literal["log"] = "log"
    sim_id: str
    lines: list[str]


class KernelEvent(Model):
    type: Literal["kernel"] = "kernel"
    stat: KernelStat


RunEvent = Annotated[SnapshotEvent | SimEvent | LogEvent | KernelEvent, Field(discriminator="type")]


# --- simulator endpoints (spec 002) ----------------------------------------------------------


class Heartbeat(Model):
    state: Literal["running", "succeeded", "failed"]
    exit_code: int | None = Field(default=None, ge=INT64_MIN, le=INT64_MAX, strict=True)
    # Optional text with any state (spec 002): a succeeded sim may report a warning, which is kept.
    error: str | None = None
    # An addition to the spec, optional, so spec clients see no change: when the simulator
    # entered `state` (started running, exited), stamped by the sender. A heartbeat retried after
    # an outage keeps it, so the sim's started_at/finished_at are its own times, not when the
    # server heard of them; the server bounds it (never in the future, never before the sim).
    at: datetime | None = Field(
        default=None, description="When the sim entered `state`, as the simulator saw it."
    )


class HeartbeatAck(Model):
    state: SimState
    cancel: bool


class LogChunk(Model):
    # Strict: "0" or 0.0 would take slot 0 for good.
    seq: int = Field(ge=0, le=INT64_MAX, strict=True)
    lines: list[str]


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
