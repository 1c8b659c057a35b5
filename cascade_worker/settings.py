"""The worker's settings: flags first, then `CASCADE_*` environment variables (pydantic-settings,
like the server's and the terminal UI's). A launcher passes everything in the environment; an
operator running a worker by hand may use the flags."""

from __future__ import annotations

from pathlib import Path

from cascade_server.shared.packaged import samples_dir
from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

# The samples shipped with Cascade (the recordings the stand-in replays).
DEFAULT_SAMPLES_DIR = samples_dir()


class Options(BaseSettings):
    # Fields without an alias read CASCADE_<FIELD>; an empty variable counts as unset.
    model_config = SettingsConfigDict(env_prefix="CASCADE_", env_ignore_empty=True, extra="ignore",
                                      populate_by_name=True, frozen=True)

    url: str
    token: str | None = None
    sim_id: str
    gpu_config: str | None = None
    trace_dir: Path | None = None
    # The trace's id: a node without trace_dir fetches the trace over the API (trace_fetch.py).
    trace_id: str | None = None
    accelsim_dir: Path | None = None
    samples_dir: Path = DEFAULT_SAMPLES_DIR
    # Flags only (--replay LOG, --wall-seconds, --keep-scratch).
    replay: Path | None = None
    wall_seconds: float | None = None
    keep_scratch: bool = False
    speed: float = Field(1.0, gt=0, allow_inf_nan=False, validation_alias="CASCADE_REPLAY_SPEED")
    scratch_parent: Path | None = Field(None, validation_alias="CASCADE_SCRATCH_DIR")
    heartbeat_interval: float = Field(5.0, gt=0, allow_inf_nan=False, validation_alias="CASCADE_HEARTBEAT_INTERVAL_S")
    kill_grace: float = Field(10.0, gt=0, allow_inf_nan=False, validation_alias="CASCADE_KILL_GRACE_S")
    give_up_after: float = Field(6 * 3600.0, gt=0, allow_inf_nan=False, validation_alias="CASCADE_GIVE_UP_S")

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"the URL must start with http:// or https://, not {url!r}")
        return url


# How an operator names each setting in an error: the flag and the variable.
NAMES = {
    "url": "--url/CASCADE_URL", "sim_id": "--sim-id/CASCADE_SIM_ID", "token": "--token/CASCADE_TOKEN",
    "gpu_config": "--gpu-config/CASCADE_GPU_CONFIG", "trace_dir": "--trace-dir/CASCADE_TRACE_DIR",
    "trace_id": "--trace-id/CASCADE_TRACE_ID",
    "accelsim_dir": "--accelsim-dir/CASCADE_ACCELSIM_DIR", "samples_dir": "--samples-dir/CASCADE_SAMPLES_DIR",
    "speed": "--speed/CASCADE_REPLAY_SPEED", "CASCADE_REPLAY_SPEED": "--speed/CASCADE_REPLAY_SPEED",
    "scratch_parent": "--scratch-dir/CASCADE_SCRATCH_DIR", "CASCADE_SCRATCH_DIR": "--scratch-dir/CASCADE_SCRATCH_DIR",
    "wall_seconds": "--wall-seconds",
}
