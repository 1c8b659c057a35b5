"""GPU configs, the options a config takes, and where new sims go (`GET /api/gpu-configs`,
`GET /api/gpu-configs/{name}/options`, `GET /api/launcher`)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from .common import Model


class GpuConfig(Model):
    name: str = Field(description='Accel-Sim tested-cfgs directory name, e.g. "SM90_H100".')
    arch: str = Field(description='For example, "sm_90".')
    core_clock_mhz: float = Field(description="First value of -gpgpu_clock_domains in gpgpusim.config.")
    added: bool = Field(
        default=False,
        description="Added with `cascade configs add` (`POST /api/gpu-configs`): kept in the data "
        "directory, not one of the simulator's own. Only these can be removed.",
    )
    power_model: bool = Field(
        default=False,
        description="The config has an AccelWattch power model (accelwattch_sass_sim.xml beside its "
        "gpgpusim.config): a run entry with `power: true` may use it.",
    )


class GpuConfigAdd(Model):
    """`POST /api/gpu-configs` (an addition to the spec): a GPU config of your own, its files as
    text. The installed simulator must take every option in them."""

    model_config = ConfigDict(extra="forbid")  # a misspelt field is refused, not ignored

    name: str = Field(
        description="The config's name: letters, digits, `_`, `-` and `.`, 1 to 64 characters, such as "
        "`SM80_A100_LAB`. An `SM<N>_` prefix gives its arch when the config sets no compute capability."
    )
    arch: str | None = Field(
        default=None,
        description='The arch of traces it runs, such as "sm_80", when neither the config\'s '
        "-gpgpu_compute_capability_major/minor nor its name says (the compute capability wins).",
    )
    files: dict[str, str] = Field(
        description="File name -> contents: `gpgpusim.config` (required), `trace.config`, and the "
        "`*.icnt` / AccelWattch `*.xml` / `*.csv` files gpgpusim.config names."
    )


class GpuConfigFiles(Model):
    """`GET /api/gpu-configs/{name}/files`: a config's files as text, for a worker on a node that
    cannot see where the server keeps them."""

    name: str
    files: dict[str, str] = Field(description="File name -> contents, as the simulator reads them.")


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
    archs: list[str] | None = Field(
        default=None,
        description="The trace archs its trace parser has opcodes for (the `*_BINART_VERSION`s of its "
        "sources), such as sm_70 and sm_80; null when unknown (the stand-in runs any trace).",
    )
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


class ConfigOption(Model):
    """An option a GPU config's simulator knows, with the config's value (`GET /api/gpu-configs/{name}/options`)."""

    name: str
    value: str
    description: str = ""
    in_config: bool = Field(default=False, description="The config's own files set it.")
