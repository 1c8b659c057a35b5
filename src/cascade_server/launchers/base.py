"""The small interface every launcher implements.

Run creation hands the launcher `SimSpec`s in the background after the 201. The launcher reports
back through `LauncherEvents`: when a scheduler queued a sim (with its `launcher_ref`), when a
sim starts launching, what the scheduler says of a queued job, and when a sim's process ended
without the sim reporting a final state itself.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from cascade_core.models import LauncherStatus

from ..faults import is_disk_full

log = logging.getLogger(__name__)

# How often a record a full disk refused is tried again.
RECORD_RETRY_S = 5.0


async def record(what: str, call: Callable[[], Awaitable[None]]) -> None:
    """Record what a launcher saw (`call`), tried again every RECORD_RETRY_S while a full disk
    refuses it: unrecorded, a started sim would stay `pending` (its log refused) and an ended one
    `running` until the heartbeat monitor called it lost. Any other failure is logged once."""
    said = False
    while True:
        try:
            await call()
            return
        except Exception as exc:
            if not is_disk_full(exc):
                log.exception("%s failed", what)
                return
            if not said:  # once per record, not every retry
                log.warning(
                    "%s waits for disk space (%s); trying again every %g s", what, exc, RECORD_RETRY_S
                )
                said = True
        await asyncio.sleep(RECORD_RETRY_S)


@dataclass(frozen=True)
class SimSpec:
    """Everything needed to start one sim's worker."""

    sim_id: str
    run_id: str
    gpu_config: str
    replica: int
    trace_id: str
    # CASCADE_URL, CASCADE_TOKEN, CASCADE_SIM_ID, CASCADE_GPU_CONFIG, CASCADE_TRACE_DIR,
    # CASCADE_ACCELSIM_DIR (when set), CASCADE_SAMPLES_DIR: what `cascade worker` reads.
    env: dict[str, str] = field(default_factory=dict)

    @property
    def job_group(self) -> str:
        """What a scheduler groups sims by: the config, and for a variant (CASCADE_SIM_OPTIONS) a
        short hash of its options, so two variants of one config never share a job array."""
        options = self.env.get("CASCADE_SIM_OPTIONS")
        if not options:
            return self.gpu_config
        return f"{self.gpu_config}.v{hashlib.sha1(options.encode()).hexdigest()[:8]}"


class LauncherEvents(Protocol):
    async def launching(self, sim_id: str, launcher_ref: str | None) -> None:
        """The sim moves pending -> launching; `launcher_ref` is a pid or job id."""

    async def exited(self, sim_id: str, exit_code: int | None, error: str) -> None:
        """The sim's process ended; a sim that has not finished becomes `failed` with `error`."""

    async def queued(self, refs: dict[str, str]) -> None:
        """A scheduler accepted these sims (sim_id -> job id, its `launcher_ref`); they stay
        `pending` until their jobs start. One call per submission, recorded at once."""

    async def ended_by(self, sim_id: str, cause: str) -> None:
        """The scheduler ended the sim's job (`Slurm job 12_0 TIMEOUT`): a sim that failed gets
        this cause added to its error (the worker saw only a signal)."""

    async def queue_state(self, sim_id: str, label: str | None) -> None:
        """What the scheduler says of the sim's job (`PENDING (Resources)`), shown with the sim."""


class Launcher(ABC):
    name: str = "base"
    # A launcher whose `submit` only records (no process, no scheduler call) is awaited before
    # `POST /api/runs` answers: its sims are `launching` by then, so a simulator started from the
    # answer finds them ready for its log (a `pending` sim's chunks are refused).
    submits_at_once: bool = False

    def __init__(self, events: LauncherEvents) -> None:
        self.events = events

    async def resume(self, pending: list[SimSpec], active: list[tuple[SimSpec, str | None]]) -> None:
        """After a server restart: start `pending` sims again; keep watching `active` ones.

        Workers that are still running are never killed by a restart.
        """

    @abstractmethod
    async def submit(self, sims: list[SimSpec]) -> None:
        """Start these sims (or queue them until there is room)."""

    @abstractmethod
    async def cancel(self, sim_id: str, launcher_ref: str | None) -> None:
        """Stop one sim's process, if there is one. Safe to repeat."""

    async def close(self) -> None:
        """The server is stopping: stop watching, but leave running workers alone."""

    def status(self) -> LauncherStatus:
        """Where new sims go and how busy it is now (`GET /api/launcher`)."""
        return LauncherStatus.model_validate({"name": self.name})
