"""Creating and cancelling runs, and the glue between the store and the launcher."""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections import Counter

from .http import ApiError
from .launchers.base import Launcher, SimSpec
from .settings import Settings
from .shared.models import GpuConfig, RunCreate, RunDetail, RunEntry, SimSummary
from .simulator_watch import SimulatorWatch
from .storage import NotFound, Store

log = logging.getLogger(__name__)


class StoreLauncherEvents:
    """What a launcher reports, applied to the store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def launching(self, sim_id: str, launcher_ref: str | None) -> None:
        await self.store.mark_launching(sim_id, launcher_ref)

    async def exited(self, sim_id: str, exit_code: int | None, error: str) -> None:
        await self.store.mark_failed(sim_id, error, exit_code)

    async def queued(self, refs: dict[str, str]) -> None:
        await self.store.set_launcher_refs(refs)

    async def ended_by(self, sim_id: str, cause: str) -> None:
        await self.store.add_failure_cause(sim_id, cause)

    async def queue_state(self, sim_id: str, label: str | None) -> None:
        await self.store.set_launcher_view(sim_id, launcher_state=label)


class RunService:
    def __init__(
        self, store: Store, settings: Settings, configs: dict[str, GpuConfig], launcher: Launcher
    ) -> None:
        self.store, self.settings, self.configs, self.launcher = store, settings, configs, launcher
        self._tasks: set[asyncio.Task] = set()
        self.simulator = SimulatorWatch(settings, configs)

    def sim_spec(self, sim: SimSummary, trace_id: str) -> SimSpec:
        settings = self.settings
        env = {
            "CASCADE_URL": settings.base_url,
            "CASCADE_TOKEN": settings.token or "",
            "CASCADE_SIM_ID": sim.id,
            "CASCADE_GPU_CONFIG": sim.gpu_config,
            "CASCADE_TRACE_DIR": str(settings.traces_dir / trace_id),
            "CASCADE_SAMPLES_DIR": str(settings.samples_dir),
        }
        if settings.launcher == "slurm":  # a node without the server's filesystem fetches it by id
            env["CASCADE_TRACE_ID"] = trace_id
        accelsim = self.simulator.accelsim_dir()
        if accelsim is not None:
            env["CASCADE_ACCELSIM_DIR"] = str(accelsim)
        if settings.replay_speed is not None:
            env["CASCADE_REPLAY_SPEED"] = str(settings.replay_speed)
        return SimSpec(
            sim_id=sim.id,
            run_id=sim.run_id,
            gpu_config=sim.gpu_config,
            replica=sim.replica,
            trace_id=trace_id,
            env=env,
        )

    async def create(self, body: RunCreate) -> RunDetail:
        trace = await self.store.get_trace(body.trace_id)
        if trace is None:
            raise NotFound(f"trace {body.trace_id} not found")
        if trace.sample:
            raise ApiError(409, f"trace {trace.id} is a sample, which has no instruction traces to simulate")
        if trace.state != "ready":
            raise ApiError(409, f"trace {trace.id} is {trace.state}, not ready")
        self.simulator.refresh()  # an install since the last run brings its configs
        if problem := self.simulator.slurm_problem():
            raise ApiError(409, problem)
        seen: set[str] = set()
        for entry in body.entries:
            config = self.configs.get(entry.gpu_config)
            if config is None:
                raise ApiError(
                    422, f"unknown gpu_config {entry.gpu_config!r}; GET /api/gpu-configs lists them"
                )
            if config.arch != trace.trace_gpu_arch:
                raise ApiError(
                    422,
                    f"gpu_config {config.name!r} is {config.arch}, but trace {trace.id} is {trace.trace_gpu_arch}",
                )
            if entry.gpu_config in seen:
                raise ApiError(
                    422,
                    f"gpu_config {entry.gpu_config!r} appears in more than one entry; raise its count instead",
                )
            seen.add(entry.gpu_config)
        # Workers we start (local or Slurm) without Accel-Sim run the stand-in: say so on the run (`replay`), so no
        # one takes its numbers for a simulation of this trace.
        stand_in = self.settings.launcher in ("local", "slurm") and not self.simulator.real()
        run = await self.store.create_run(trace, body.entries, self.configs, replay=stand_in)
        self._background(self._submit([self.sim_spec(sim, trace.id) for sim in run.sims]))
        return run

    async def _submit(self, specs: list[SimSpec]) -> None:
        try:
            await self.launcher.submit(specs)
        except Exception as exc:  # the launcher could not start them: say so on each sim
            log.exception("launcher %s failed", self.launcher.name)
            for spec in specs:
                await self.store.mark_failed(spec.sim_id, f"launcher {self.launcher.name} failed: {exc}")

    async def cancel(self, run_id: str) -> RunDetail:
        run, cancelled = await self.store.cancel_run(run_id)
        for sim in cancelled:
            self._background(self.launcher.cancel(sim.id, sim.launcher_ref))
        return run

    async def _require_run_with_its_trace(self, run_id: str) -> RunDetail:
        """A run to start again: refused (409) when its trace was deleted, for a trace uploaded
        since under that id is another trace, not the one the run simulated."""
        run = await self.store.require_run(run_id)
        if (
            run.trace_id
            and await self.store.live_trace_of_run(run_id) is None
            and await self.store.get_trace(run.trace_id) is not None
        ):
            raise ApiError(
                409,
                f"run {run_id}'s trace {run.trace_id} was deleted; the trace now "
                "under that id is another upload: start a new run on it",
            )
        return run

    async def rerun(self, run_id: str) -> RunDetail:
        """A new run of the same trace with the same entries (the old run stays as it is)."""
        run = await self._require_run_with_its_trace(run_id)
        return await self.create(RunCreate(trace_id=run.trace_id, entries=run.entries))

    async def retry(self, run_id: str) -> RunDetail:
        """A new run of the same trace with one sim for each sim of this run that `failed`, on the
        same configs, in entry order. Sims stay terminal (SIM_TRANSITIONS), so a failed sim is
        never restarted in place; cancelled sims were stopped on purpose and are not retried."""
        run = await self._require_run_with_its_trace(run_id)
        failed = Counter(sim.gpu_config for sim in run.sims if sim.state == "failed")
        if not failed:
            raise ApiError(409, f"run {run_id} has no failed sims to retry")
        entries = [
            RunEntry(gpu_config=e.gpu_config, count=failed[e.gpu_config])
            for e in run.entries
            if failed[e.gpu_config]
        ]
        return await self.create(RunCreate(trace_id=run.trace_id, entries=entries))

    async def delete(self, run_id: str) -> None:
        """Delete a finished run: its rows, then its sims' uploaded files and worker logs."""
        run = await self.store.delete_run(run_id)
        await asyncio.to_thread(self._remove_sim_files, [sim.id for sim in run.sims])

    def _remove_sim_files(self, sim_ids: list[str]) -> None:
        for sim_id in sim_ids:
            shutil.rmtree(self.settings.files_dir / sim_id, ignore_errors=True)
            (self.settings.workers_dir / f"{sim_id}.log").unlink(missing_ok=True)

    async def resume(self) -> None:
        """After a restart: hand unfinished sims back to the launcher."""
        # A pending sim with a launcher_ref is queued in a scheduler (Slurm): watch it, never
        # submit it twice.
        waiting = await self.store.sims_in_states(["pending"])
        pending = [self.sim_spec(s, t) for s, t in waiting if s.launcher_ref is None]
        active = [
            (self.sim_spec(s, t), s.launcher_ref)
            for s, t in [
                *[w for w in waiting if w[0].launcher_ref is not None],
                *await self.store.sims_in_states(["launching", "running", "lost"]),
            ]
        ]
        await self.launcher.resume(pending, active)

    def _background(self, coro) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
