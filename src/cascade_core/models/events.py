"""The events on `GET /api/runs/{run_id}/events`: a snapshot, then sims, log lines and kernels."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .common import Model
from .kernels import KernelStat
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


RunEvent = Annotated[SnapshotEvent | SimEvent | LogEvent | KernelEvent, Field(discriminator="type")]
