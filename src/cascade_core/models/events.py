"""The events on `GET /api/runs/{run_id}/events`: a snapshot, then sims, log lines and kernels."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .common import Model
from .kernels import KernelPower, KernelStat
from .runs import RunDetail
from .sims import SimSummary


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


class KernelPowerAt(Model):
    kernel_index: int
    power: KernelPower


class KernelPowerEvent(Model):
    """Not in the spec (an addition): kernels' power arrived, for kernels whose `kernel` event
    came before (a sim with `power: true`: its power follows its stats). The kernel's energy is
    its power's avg_w times its sim_time_ns."""

    type: Literal["kernel_power"] = "kernel_power"
    sim_id: str
    kernels: list[KernelPowerAt]


RunEvent = Annotated[
    SnapshotEvent | SimEvent | LogEvent | KernelEvent | KernelPowerEvent, Field(discriminator="type")
]
