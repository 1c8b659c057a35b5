"""Creating and cancelling runs, and the glue between the store and the launcher."""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
from collections import Counter
from collections.abc import Iterable

from cascade_core import power_report
from cascade_core.models import (
    ConfigOption,
    GpuConfig,
    RunCreate,
    RunDetail,
    SimSummary,
    TraceDetail,
    run_size_problem,
)
from cascade_core.quoting import quoted
from cascade_core.shard_plan import SHARD_VARIABLE, ShardPlanError

from ..domain_errors import Conflict, Invalid, NotFound
from ..launchers.base import Launcher, SimSpec
from ..settings import Settings
from ..simulator_watch import SimulatorWatch
from ..storage import Store
from .sampling_plans import sample_plans
from .shard_planning import shard_plans
from .variant_check import OptionCatalog

log = logging.getLogger(__name__)


class StoreLauncherEvents:
    """What a launcher reports, applied to the store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def launching(self, sim_id: str, launcher_ref: str | None) -> None:
        await self.store.sim_states.mark_launching(sim_id, launcher_ref)

    async def exited(self, sim_id: str, exit_code: int | None, error: str) -> None:
        await self.store.sim_states.mark_failed(sim_id, error, exit_code)

    async def queued(self, refs: dict[str, str]) -> None:
        await self.store.sim_states.set_launcher_refs(refs)

    async def ended_by(self, sim_id: str, cause: str) -> None:
        await self.store.sim_states.add_failure_cause(sim_id, cause)

    async def queue_state(self, sim_id: str, label: str | None) -> None:
        await self.store.sim_states.set_launcher_view(sim_id, launcher_state=label)


class RunService:
    def __init__(
        self, store: Store, settings: Settings, configs: dict[str, GpuConfig], launcher: Launcher
    ) -> None:
        self.store, self.settings, self.configs, self.launcher = store, settings, configs, launcher
        self._tasks: set[asyncio.Task] = set()
        self.simulator = SimulatorWatch(settings, configs)
        self.options = OptionCatalog()
        # Held from a run's config check to its sims being stored, and by adding or removing a
        # config (config_service.py): a config is never removed under a run being created.
        self.configs_lock = asyncio.Lock()

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
        if (added := self.simulator.added_dir(sim.gpu_config)) is not None:
            # a config added with `cascade configs add`: its files are in the data directory (a
            # node that cannot see it fetches them: GET /api/gpu-configs/{name}/files)
            env["CASCADE_GPU_CONFIG_DIR"] = str(added)
        if settings.replay_speed is not None:
            env["CASCADE_REPLAY_SPEED"] = str(settings.replay_speed)
        if sim.shard is not None:  # the part of the trace this sim simulates
            env[SHARD_VARIABLE] = sim.shard.model_dump_json()
        if sim.options:  # the variant's options, given to accel-sim.out after the configs
            env["CASCADE_SIM_OPTIONS"] = json.dumps(sim.options)
        # going on past a kernel the simulator fails on (the worker's defaults: continue, 1)
        env["CASCADE_ON_KERNEL_FAILURE"] = sim.on_kernel_failure
        env["CASCADE_WARMUP_KERNELS"] = str(sim.warmup_kernels)
        if sim.sample is not None:  # a sampled sim: the kernels it simulates
            env["CASCADE_SAMPLE"] = sim.sample
        if sim.power:  # AccelWattch, with the config's own power model
            env["CASCADE_POWER"] = "1"
        return SimSpec(
            sim_id=sim.id,
            run_id=sim.run_id,
            gpu_config=sim.gpu_config,
            replica=sim.replica,
            trace_id=trace_id,
            env=env,
        )

    async def create(self, body: RunCreate) -> RunDetail:
        if problem := run_size_problem(body.entries):  # before anything is looked up or stored
            raise Invalid(problem)
        trace = await self.store.traces.get_trace(body.trace_id)
        if trace is None:
            raise NotFound(f"trace {body.trace_id} not found")
        if trace.sample:
            raise Conflict(f"trace {trace.id} is a sample, which has no instruction traces to simulate")
        if trace.state != "ready":
            raise Conflict(f"trace {trace.id} is {trace.state}, not ready")
        async with self.configs_lock:  # no config is removed until the run's sims are stored
            run = await self._create_checked(body, trace)
        await self._hand_over([self.sim_spec(sim, trace.id) for sim in run.sims])
        return run

    async def _create_checked(self, body: RunCreate, trace: TraceDetail) -> RunDetail:
        self.simulator.refresh()  # an install since the last run brings its configs
        if problem := self.simulator.slurm_problem():
            raise Conflict(problem)
        if problem := self.simulator.arch_problem(trace.trace_gpu_arch, trace.id):
            raise Invalid(problem)  # the straight answer: no config of any name can run it here
        for entry in body.entries:
            config = self.configs.get(entry.gpu_config)
            if config is None:
                raise Invalid(
                    f"unknown gpu_config {quoted(entry.gpu_config)}; GET /api/gpu-configs lists them"
                )
            if config.arch != trace.trace_gpu_arch:
                raise Invalid(
                    f"gpu_config {config.name!r} is {config.arch}, but trace {trace.id} is {trace.trace_gpu_arch}",
                )
            if entry.power and self._stand_in():
                raise Invalid(
                    "power needs the real simulator: the stand-in replays a recorded log, which has no "
                    "power; install it with `cascade simulator install`"
                )
            if entry.power and not config.power_model:
                same_arch = [c for c in self.configs.values() if c.arch == config.arch]
                raise Invalid(power_model_problem(config.name, same_arch))
        # Workers we start (local or Slurm) without Accel-Sim run the stand-in: say so on the run (`replay`), so no
        # one takes its numbers for a simulation of this trace.
        stand_in = self._stand_in()
        # variants: options the config and simulator know, unique (config, options) and labels (Invalid if not)
        accelsim = self.simulator.accelsim_dir()
        entries = await self.options.check_entries(
            body.entries,
            locate=self.simulator.locate,
            accelsim=accelsim if self.simulator.real() else None,
            stand_in=stand_in,
            tree=accelsim or self.settings.configs_root,
        )
        if stand_in and (sampled := next((e for e in entries if e.sampling != "none"), None)):
            raise Invalid(
                f"sampling ({sampled.sampling}) needs the real simulator: the stand-in replays a recorded "
                "log, so it cannot simulate some kernels and estimate the rest; install it with "
                "`cascade simulator install`"
            )
        trace_dir = self.settings.traces_dir / trace.id
        try:
            plans = await shard_plans(trace, trace_dir, entries)
            real = await self.store.traces.real_timing(trace.id) if trace.has_real_timing else None
            samples = await sample_plans(trace, trace_dir, entries, real)
        except ShardPlanError as exc:
            raise Invalid(str(exc)) from None
        return await self.store.runs.create_run(
            trace, entries, self.configs, replay=stand_in, shard_plans=plans, samples=samples
        )

    def _stand_in(self) -> bool:
        """Whether the workers we start (local or Slurm) run the stand-in: no Accel-Sim here."""
        return self.settings.launcher in ("local", "slurm") and not self.simulator.real()

    async def _hand_over(self, specs: list[SimSpec]) -> None:
        """Give new sims to the launcher: now when it submits at once, else in the background."""
        if self.launcher.submits_at_once:
            await self._submit(specs)
        else:
            self._background(self._submit(specs))

    async def config_options(self, name: str) -> list[ConfigOption]:
        """The simulator options GPU config `name` takes (`GET /api/gpu-configs/{name}/options`):
        the simulator's, with the config's values, or only its config files' without a simulator."""
        accelsim = self.simulator.refresh()  # an install since the last look brings its configs
        config = self.simulator.locate(name)
        if config is None:
            raise NotFound(f"gpu_config {name} not found; GET /api/gpu-configs lists them")
        return await self.options.options(config, accelsim if self.simulator.real() else None)

    async def _submit(self, specs: list[SimSpec]) -> None:
        try:
            await self.launcher.submit(specs)
        except Exception as exc:  # the launcher could not start them: say so on each sim
            log.exception("launcher %s failed", self.launcher.name)
            for spec in specs:
                await self.store.sim_states.mark_failed(
                    spec.sim_id, f"launcher {self.launcher.name} failed: {exc}"
                )

    async def cancel(self, run_id: str) -> RunDetail:
        run, cancelled = await self.store.sim_states.cancel_run(run_id)
        for sim in cancelled:
            self._background(self.launcher.cancel(sim.id, sim.launcher_ref))
        return run

    async def _require_run_with_its_trace(self, run_id: str) -> RunDetail:
        """A run to start again: refused (409) when its trace was deleted, for a trace uploaded
        since under that id is another trace, not the one the run simulated."""
        run = await self.store.runs.require_run(run_id)
        if (
            run.trace_id
            and await self.store.traces.live_trace_of_run(run_id) is None
            and await self.store.traces.get_trace(run.trace_id) is not None
        ):
            raise Conflict(
                f"run {run_id}'s trace {run.trace_id} was deleted; the trace now "
                "under that id is another upload: start a new run on it"
            )
        return run

    async def rerun(self, run_id: str) -> RunDetail:
        """A new run of the same trace with the same entries (the old run stays as it is)."""
        run = await self._require_run_with_its_trace(run_id)
        return await self.create(RunCreate(trace_id=run.trace_id, entries=run.entries))

    async def retry(self, run_id: str) -> RunDetail:
        """A new run of the same trace with one sim for each sim of this run that `failed`, on the
        same configs, in entry order. Sims stay terminal (SIM_TRANSITIONS), so a failed sim is
        never restarted in place; cancelled sims were stopped on purpose and are not retried,
        except a sharded replica's cancelled shards (retried in place: the replica's merged result
        needs each of its shards)."""
        run = await self._require_run_with_its_trace(run_id)
        if any(entry.shards > 1 for entry in run.entries):
            # A sharded run: each failed shard again, alone, in this run, so its merged result is
            # whole again without simulating the shards that succeeded (store.runs.retry_in_place).
            async with self.configs_lock:  # its configs stay until the new shards are stored
                if gone := sorted({e.gpu_config for e in run.entries} - set(self.configs)):
                    raise Invalid(
                        f"run {run_id}'s config {gone[0]} was removed; GET /api/gpu-configs lists them"
                    )
                run, created = await self.store.runs.retry_in_place(run_id)
            await self._hand_over([self.sim_spec(sim, run.trace_id) for sim in created])
            return run
        failed = Counter(sim.label for sim in run.sims if sim.state == "failed")
        if not failed:
            raise Conflict(f"run {run_id} has no failed sims to retry")
        entries = [
            e.model_copy(update={"count": failed[e.variant]}) for e in run.entries if failed[e.variant]
        ]
        return await self.create(RunCreate(trace_id=run.trace_id, entries=entries))

    async def delete(self, run_id: str) -> None:
        """Delete a finished run: its rows, then its sims' uploaded files and worker logs."""
        sim_ids = await self.store.runs.all_sim_ids(run_id)  # with those retried in place
        run = await self.store.runs.delete_run(run_id)
        await asyncio.to_thread(self._remove_sim_files, [*{sim.id for sim in run.sims}, *sim_ids])

    def _remove_sim_files(self, sim_ids: list[str]) -> None:
        for sim_id in sim_ids:
            shutil.rmtree(self.settings.files_dir / sim_id, ignore_errors=True)
            (self.settings.workers_dir / f"{sim_id}.log").unlink(missing_ok=True)

    async def resume(self) -> None:
        """After a restart: hand unfinished sims back to the launcher."""
        # A pending sim with a launcher_ref is queued in a scheduler (Slurm): watch it, never
        # submit it twice.
        waiting = await self.store.runs.sims_in_states(["pending"])
        pending = [self.sim_spec(s, t) for s, t in waiting if s.launcher_ref is None]
        active = [
            (self.sim_spec(s, t), s.launcher_ref)
            for s, t in [
                *[w for w in waiting if w[0].launcher_ref is not None],
                *await self.store.runs.sims_in_states(["launching", "running", "lost"]),
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


def power_model_problem(name: str, configs: Iterable[GpuConfig]) -> str:
    """The 422 sentence for `power: true` on a config without an AccelWattch model."""
    have = sorted(c.name for c in configs if c.power_model)
    which = f"configs of its arch with one: {', '.join(have)}" if have else "no config of its arch has one"
    return (
        f"gpu_config {name!r} has no AccelWattch power model ({power_report.MODEL_FILE} beside its "
        f"gpgpusim.config), so it cannot simulate power; {which}"
    )
