"""Adding and removing GPU configs of your own (`POST /api/gpu-configs`, `DELETE
/api/gpu-configs/{name}`, `cascade configs add|remove`), and a config's files for a worker that
cannot see them (`GET /api/gpu-configs/{name}/files`).

A config is added only when the installed simulator takes it: the rules first
(cascade_core/added_configs.py: name, files, sizes, values that stay in the config's folder, a
clock and an arch), then `accel-sim.out` itself on the staged files (cascade_core/config_probe.py);
a refusal is a 422 with the simulator's own words. The server's config list changes at once, for
every client. A config that a pending or active sim uses is not removed (409): its sims would
lose their files. Both hold the run service's configs lock, so no run is created on a config
half-way through being removed.
"""

from __future__ import annotations

import asyncio
import logging

from cascade_core import added_configs, config_probe
from cascade_core.models import SIM_STATES, TERMINAL_SIM_STATES, GpuConfig, GpuConfigAdd, GpuConfigFiles
from cascade_core.quoting import quoted

from ..domain_errors import Conflict, Invalid, NotFound
from .run_service import RunService

log = logging.getLogger(__name__)

UNFINISHED = [state for state in SIM_STATES if state not in TERMINAL_SIM_STATES]
NO_SIMULATOR = (
    "no real simulator is installed to check config {name} with: install it first (`cascade "
    "simulator install`), then add the config"
)


class ConfigService:
    def __init__(self, runs: RunService) -> None:
        self.runs = runs
        self.watch = runs.simulator

    async def add(self, body: GpuConfigAdd) -> GpuConfig:
        if problem := added_configs.add_problem(body):
            raise Invalid(problem)
        config = added_configs.describe(body)
        if config is None:
            raise Invalid(
                f"cannot tell which arch config {body.name} is for: its gpgpusim.config sets no "
                "-gpgpu_compute_capability_major/minor and its name has no SM<N>_ prefix; give the arch "
                '(`--arch sm_80`, or "arch" in the body)'
            )
        self._may_add(body.name)
        accelsim = self.watch.refresh()
        if accelsim is None or not self.watch.real():
            raise Conflict(NO_SIMULATOR.format(name=body.name))
        store = self.watch.added
        staging = await asyncio.to_thread(store.stage, body, config)
        try:
            # The simulator's check (seconds) runs outside the configs lock: runs are created
            # meanwhile; the name is checked again, under the lock, before the config is kept.
            result = await asyncio.to_thread(
                config_probe.probe, accelsim, config_probe.ConfigFiles.in_folder(staging, body.name)
            )
            if not result.accepted:
                why = "cannot check it" if not result.ran else "refuses it"
                raise Invalid(f"config {body.name}: the installed simulator {why}: {result.complaint}")
            async with self.runs.configs_lock:
                self.watch.refresh()
                self._may_add(body.name)
                await asyncio.to_thread(store.commit, staging, body.name)
                await asyncio.to_thread(self.watch.reload_added)
        finally:
            await asyncio.to_thread(store.discard, staging)  # gone already when committed
        log.info("GPU config %s added (%s, %g MHz)", config.name, config.arch, config.core_clock_mhz)
        return self.watch.configs.get(config.name, config)

    def _may_add(self, name: str) -> None:
        if self.watch.is_added(name):
            raise Conflict(f"config {name} was already added; remove it first to replace it")
        if self.watch.in_simulator(name):
            raise Conflict(
                f"config {name} is one of the simulator's own configs: give yours another name (--name)"
            )

    async def remove(self, name: str) -> None:
        async with self.runs.configs_lock:
            self.watch.refresh()
            if not self.watch.is_added(name):
                if self.watch.in_simulator(name):
                    raise Conflict(
                        f"config {name} is one of the simulator's own configs; only configs added with "
                        "`cascade configs add` can be removed"
                    )
                raise NotFound(f"gpu_config {quoted(name)} not found; GET /api/gpu-configs lists them")
            users = sorted(
                {
                    sim.run_id
                    for sim, _ in await self.runs.store.runs.sims_in_states(UNFINISHED)
                    if sim.gpu_config == name
                }
            )
            if users:
                listed = ", ".join(users[:5]) + (f" and {len(users) - 5} more" if len(users) > 5 else "")
                raise Conflict(
                    f"config {name} is in use by unfinished run{'s' if len(users) > 1 else ''} {listed}: "
                    f"cancel {'them' if len(users) > 1 else 'it'} or let {'them' if len(users) > 1 else 'it'} "
                    "finish, then remove the config"
                )
            await asyncio.to_thread(self.watch.added.remove, name)
            await asyncio.to_thread(self.watch.reload_added)
        log.info("GPU config %s removed", name)

    async def files(self, name: str) -> GpuConfigFiles:
        self.watch.refresh()
        config = self.watch.locate(name)
        if config is None:
            raise NotFound(f"gpu_config {quoted(name)} not found; GET /api/gpu-configs lists them")

        def read() -> dict[str, str]:
            return {path.name: path.read_bytes().decode("utf-8", errors="replace") for path in config.files()}

        try:
            return GpuConfigFiles(name=name, files=await asyncio.to_thread(read))
        except OSError as exc:
            raise NotFound(f"gpu_config {name}'s files cannot be read: {exc.strerror or exc}") from None
