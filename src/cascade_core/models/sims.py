"""Sims: a sim's summary with its progress and shard, and what a simulator sends (spec 002:
heartbeats, log chunks) and uploads (output files)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field, model_validator

from .common import INT64_MAX, INT64_MIN, Model
from .sampling import SamplingInfo
from .states import SimState

# A file a sim uploads: letters, digits, '.', '_' and '-', 1..128 characters, not '.' or '..'.
FILE_NAME_PATTERN = r"^(?!\.\.?$)[A-Za-z0-9._-]{1,128}$"


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
    # Not in the spec (an addition): of kernels_done, those the simulator failed on (the sim went
    # on past them, on_kernel_failure "continue"); they have no results.
    kernels_failed: int = Field(default=0, exclude_if=lambda v: v == 0)
    # Not in the spec (an addition): a sampled sim's sample (issue 33); absent otherwise.
    sampling: SamplingInfo | None = Field(default=None, exclude_if=lambda v: v is None)
    # Not in the spec (an addition): the sim simulates power (its run entry's `power`).
    power: bool = Field(default=False, exclude_if=lambda v: not v)
    # The run entry's choices its launch needs (server-side only: never sent, never read).
    on_kernel_failure: Literal["continue", "stop"] = Field(default="continue", exclude=True)
    warmup_kernels: int = Field(default=1, exclude=True)
    sample: str | None = Field(default=None, exclude=True)  # a sampled sim's kernels, as ranges
    current_kernel: str | None = None
    latest: SimMetrics = Field(default_factory=SimMetrics)
    log_tail: list[str] = Field(default_factory=list)
    # Not in the spec (additions clients may ignore): the part of the trace a shard simulates
    # (null for a sim of the whole trace), and the failed sim this one retries in place.
    shard: ShardInfo | None = Field(default=None, exclude_if=lambda v: v is None)
    retry_of: str | None = Field(default=None, exclude_if=lambda v: v is None)
    # Not in the spec (an addition): the runs of log chunks (first and last seq) that never
    # arrived, closed 30 s after the gap opened or at the final heartbeat; the log has no lines
    # of them (it stays exactly what the simulator sent). Absent when none.
    missing_log_chunks: list[tuple[int, int]] = Field(default_factory=list, exclude_if=lambda v: not v)
    # Not in the spec (additions clients may ignore): the variant the sim runs. `label` is the
    # config's name for a sim without options, so grouping by label groups by config.
    options: dict[str, str] = Field(default_factory=dict, description="Simulator options after the configs.")
    label: str = Field(default="", description="The variant: its entry's label, or gpu_config.")

    @model_validator(mode="after")
    def _label_defaults_to_config(self) -> SimSummary:
        if not self.label:
            self.label = self.gpu_config
        return self


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
