"""The worker's settings: flags first, then `CASCADE_*` environment variables (pydantic-settings,
like the server's and the terminal UI's). A launcher passes everything in the environment; an
operator running a worker by hand may use the flags."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from cascade_core.log_notes import parse_ranges
from cascade_core.models import ShardInfo
from cascade_core.packaged import samples_dir
from cascade_core.shard_plan import MAX_WARMUP_KERNELS
from cascade_core.variants import VariantError, normalize_options

# The samples shipped with Cascade (the recordings the stand-in replays).
DEFAULT_SAMPLES_DIR = samples_dir()


class Options(BaseSettings):
    # Fields without an alias read CASCADE_<FIELD>; an empty variable counts as unset.
    model_config = SettingsConfigDict(
        env_prefix="CASCADE_", env_ignore_empty=True, extra="ignore", populate_by_name=True, frozen=True
    )

    # Every field has a `description`: docs/gen_reference.py writes the configuration reference from them.
    url: str = Field(description="the server's URL")
    token: str | None = Field(default=None, description="the server's token")
    sim_id: str = Field(description="the sim to run")
    gpu_config: str | None = Field(default=None, description="the GPU config, e.g. `SM7_QV100`")
    trace_dir: Path | None = Field(
        default=None, description="the trace's directory, holding `traces/kernelslist.g`"
    )
    # The trace's id: a node without trace_dir fetches the trace over the API (trace_fetch.py).
    trace_id: str | None = Field(
        default=None,
        description="the trace's id: fetched over the API into local scratch "
        "(once per node) when `--trace-dir` is not on this host",
    )
    accelsim_dir: Path | None = Field(
        default=None, description="an Accel-Sim checkout with a built `accel-sim.out`"
    )
    # A config added with `cascade configs add` lives in the server's data directory, not in the
    # simulator's tree; a node that cannot see this folder fetches the files (config_fetch.py).
    gpu_config_dir: Path | None = Field(
        default=None,
        description="the folder holding the GPU config's files (`gpgpusim.config`, `trace.config`, ...) "
        "when it is not one of the simulator's own: a config added with `cascade configs add`; fetched "
        "over the API when this host cannot see it",
    )
    shard: ShardInfo | None = Field(
        default=None,
        description="a shard's part of the trace, as JSON (`ShardInfo`): its kernel range and warm-up "
        "kernels; set by the server for a sharded run",
    )
    sample: str | None = Field(
        default=None,
        description="a sampled sim's kernels (1-based trace positions as ranges, `1, 5, 9-12`): it "
        "simulates only these, each after its warm-up kernels; set by the server for a run entry "
        "with `sampling`",
    )
    samples_dir: Path = Field(
        default=DEFAULT_SAMPLES_DIR,
        json_schema_extra={"doc_default": "the package's own"},
        description="where the stand-in's recordings are",
    )
    sim_options: dict[str, str] = Field(
        default_factory=dict,
        json_schema_extra={"doc_default": "none"},
        description="simulator options given to `accel-sim.out` after the configs, as JSON "
        '(`{"-gpgpu_n_clusters": "40"}`; `--option -gpgpu_n_clusters=40`, repeatable); '
        "the stand-in refuses them",
    )
    # Flags only (--replay LOG, --wall-seconds, --keep-scratch).
    replay: Path | None = Field(
        default=None, description="replay this recorded log instead of simulating (`--replay LOG`)"
    )
    wall_seconds: float | None = Field(
        default=None, description="the recorded run's wall time, for `--replay LOG`"
    )
    keep_scratch: bool = Field(default=False, description="keep the scratch directory")
    speed: float = Field(
        default=1.0,
        gt=0,
        allow_inf_nan=False,
        validation_alias="CASCADE_REPLAY_SPEED",
        description="stand-in pacing: replay this many times faster than recorded",
    )
    scratch_parent: Path | None = Field(
        default=None,
        validation_alias="CASCADE_SCRATCH_DIR",
        json_schema_extra={"doc_default": "system temp dir"},
        description="parent of its scratch directory (simulator working dir, spool)",
    )
    heartbeat_interval: float = Field(
        default=5.0,
        gt=0,
        allow_inf_nan=False,
        validation_alias="CASCADE_HEARTBEAT_INTERVAL_S",
        description="seconds between `running` heartbeats",
    )
    kill_grace: float = Field(
        default=10.0,
        gt=0,
        allow_inf_nan=False,
        validation_alias="CASCADE_KILL_GRACE_S",
        description="seconds between SIGTERM and SIGKILL when a sim is stopped",
    )
    on_kernel_failure: Literal["continue", "stop"] = Field(
        default="continue",
        description="when real Accel-Sim stops on a kernel (an abort, an assertion, a signal, its "
        "deadlock report): `continue` records the kernel as failed and starts the simulator again on "
        "the sim's kernels after it; `stop` ends the sim there, failed; set by the server from the "
        "run entry",
    )
    warmup_kernels: int = Field(
        default=1,
        ge=0,
        le=MAX_WARMUP_KERNELS,
        description="kernels a restarted simulator runs just before the next kernel, whose stats "
        "are dropped; set by the server from the run entry",
    )
    power: bool = Field(
        default=False,
        description="simulate power with AccelWattch (the config's accelwattch_sass_sim.xml) and "
        "report each kernel's; set by the server for a run entry with `power: true`",
    )
    kernel_wall_limit_s: float = Field(
        default=0.0,
        ge=0,
        allow_inf_nan=False,
        validation_alias="CASCADE_KERNEL_WALL_LIMIT_S",
        description="stop a real simulator when no kernel has launched or finished for this many "
        "seconds: the running kernel fails in the simulator (and the sim goes on past it); 0 "
        "leaves it to GPGPU-Sim's own deadlock detection",
    )
    # The sim's limits (sim_limits.py): each applied to the simulator's process only.
    sim_memory_limit_mb: int | None = Field(
        default=None,
        ge=0,
        le=2**30,
        validation_alias="CASCADE_SIM_MEMORY_LIMIT_MB",
        json_schema_extra={
            "doc_default": "¾ of the host's memory (or its cgroup's, when less) ÷ `CASCADE_LOCAL_SLOTS`, "
            "at least `1024`"
        },
        description="the memory (address space) a simulator may use, in MiB: past it an allocation "
        "fails and the sim fails, saying so; 0: no limit",
    )
    sim_cpu_limit_s: float = Field(
        default=24 * 3600.0,
        ge=0,
        le=1e9,
        allow_inf_nan=False,
        validation_alias="CASCADE_SIM_CPU_LIMIT_S",
        description="the CPU time a sim's simulators may use in all (a restarted one gets what is "
        "left), in seconds: past it the sim fails, saying so; 0: no limit",
    )
    sim_file_limit_mb: int = Field(
        default=1024,
        ge=0,
        le=2**30,
        validation_alias="CASCADE_SIM_FILE_LIMIT_MB",
        description="the largest file a simulator may write in its scratch directory, in MiB: past it "
        "the sim fails, saying so; 0: no limit",
    )
    sim_log_limit_mb: int = Field(
        default=256,
        ge=0,
        le=2**30,
        validation_alias="CASCADE_SIM_LOG_LIMIT_MB",
        description="the sim's log (its local copy, its spool and what it sends), in MiB: past it only "
        "kernel launches, stats blocks, failures and Cascade's notes are kept, and the log and the "
        "sim's error say how much was left out; 0: no limit (the server has its own limit)",
    )
    local_slots: int = Field(
        default=1,
        ge=1,
        le=100_000,
        validation_alias="CASCADE_LOCAL_SLOTS",
        description="sims that run on this host at once, sharing its memory for the default memory "
        "limit; the local launcher passes its own",
    )
    give_up_after: float = Field(
        default=6 * 3600.0,
        gt=0,
        allow_inf_nan=False,
        validation_alias="CASCADE_GIVE_UP_S",
        description="how long it keeps retrying an unreachable server (output waits in a "
        "disk spool meanwhile)",
    )

    @field_validator("sim_options")
    @classmethod
    def _safe_options(cls, options: dict[str, str]) -> dict[str, str]:
        try:
            return normalize_options(options)
        except VariantError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("sample")
    @classmethod
    def _kernel_ranges(cls, sample: str | None) -> str | None:
        if sample is not None:
            try:
                if not parse_ranges(sample):
                    raise ValueError("no kernel")
            except ValueError:
                raise ValueError(f"not kernel ranges like `1, 5, 9-12`: {sample[:60]!r}") from None
        return sample

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"the URL must start with http:// or https://, not {url!r}")
        return url


# How an operator names each setting in an error: the flag and the variable.
NAMES = {
    "url": "--url/CASCADE_URL",
    "sim_id": "--sim-id/CASCADE_SIM_ID",
    "token": "--token/CASCADE_TOKEN",
    "gpu_config": "--gpu-config/CASCADE_GPU_CONFIG",
    "trace_dir": "--trace-dir/CASCADE_TRACE_DIR",
    "trace_id": "--trace-id/CASCADE_TRACE_ID",
    "accelsim_dir": "--accelsim-dir/CASCADE_ACCELSIM_DIR",
    "gpu_config_dir": "--gpu-config-dir/CASCADE_GPU_CONFIG_DIR",
    "samples_dir": "--samples-dir/CASCADE_SAMPLES_DIR",
    "speed": "--speed/CASCADE_REPLAY_SPEED",
    "CASCADE_REPLAY_SPEED": "--speed/CASCADE_REPLAY_SPEED",
    "scratch_parent": "--scratch-dir/CASCADE_SCRATCH_DIR",
    "CASCADE_SCRATCH_DIR": "--scratch-dir/CASCADE_SCRATCH_DIR",
    "wall_seconds": "--wall-seconds",
    "shard": "CASCADE_SHARD",
    "sample": "CASCADE_SAMPLE",
    "sim_options": "--option/CASCADE_SIM_OPTIONS",
    "on_kernel_failure": "CASCADE_ON_KERNEL_FAILURE",
    "warmup_kernels": "CASCADE_WARMUP_KERNELS",
    "power": "CASCADE_POWER",
    "kernel_wall_limit_s": "CASCADE_KERNEL_WALL_LIMIT_S",
    "CASCADE_KERNEL_WALL_LIMIT_S": "CASCADE_KERNEL_WALL_LIMIT_S",
    **{
        key: variable
        for variable in (
            "CASCADE_SIM_MEMORY_LIMIT_MB",
            "CASCADE_SIM_CPU_LIMIT_S",
            "CASCADE_SIM_FILE_LIMIT_MB",
            "CASCADE_SIM_LOG_LIMIT_MB",
            "CASCADE_LOCAL_SLOTS",
        )
        for key in (variable, variable.removeprefix("CASCADE_").lower())
    },
}
