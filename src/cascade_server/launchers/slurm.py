"""`CASCADE_LAUNCHER=slurm`: every sim is a Slurm job running `cascade worker`.

- Submit: one `sbatch` per run entry (a job array, task N = the entry's N-th sim), all entries
  at once; a sim's `launcher_ref` is `JOBID_N` and it stays `pending` while Slurm queues it.
  A refused sbatch fails the entry's sims at once with Slurm's message.
- Watch: one `squeue` call for every tracked job each `poll_s` (never one per sim). A job that
  starts moves its sim to `launching` (its worker's heartbeats take it from there); the state
  and reason Slurm shows (`PENDING (Resources)`) reach the sim as its `launcher_state`. A job
  that ends, or leaves the queue, without the worker's final report fails its sim with what
  Slurm says (sacct when accounting exists, else squeue's last word) and the worker's exit
  status from the job's exit-code file.
- Cancel: `scancel` of the sims' jobs, batched into one call.
- Restart: jobs are found again by id (`resume`); a server restart never touches them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from cascade_core.models import LauncherStatus

from .base import Launcher, LauncherEvents, SimSpec
from .environment import WORKER_SETTINGS
from .slurm_jobs import (
    ADOPT_FORMAT,
    SACCT_FIELDS,
    SQUEUE_FORMAT,
    ArrayJob,
    JobState,
    SlurmError,
    adoptable_tasks,
    array_job_id,
    batch_script,
    failure_reason,
    job_name,
    parse_exit_file,
    parse_sacct,
    parse_sbatch_output,
    parse_squeue,
    sbatch_argv,
    slurm_message,
    task_ref,
)
from .slurm_shards import array_label

log = logging.getLogger(__name__)

COMMAND_TIMEOUT_S = 60.0
# The worker's own settings (environment.WORKER_SETTINGS, as a local worker gets them), passed on
# to the jobs when the server was started with them: a job gets only what it is given.
FORWARDED_WORKER_SETTINGS = tuple(sorted(WORKER_SETTINGS))
CANCEL_BATCH_S = 0.05  # cancels of one run arrive as one task each: gather them into one scancel


@dataclass
class SlurmOptions:
    worker_command: list[str]
    output_dir: Path
    partition: str | None = None
    account: str | None = None
    time_limit: str | None = None
    extra_args: list[str] = field(default_factory=list)
    poll_s: float = 5.0


@dataclass
class Tracked:
    sim_id: str
    ref: str
    started: bool = False
    last: JobState | None = None


async def run_command(
    argv: list[str],
    stdin: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = COMMAND_TIMEOUT_S,
) -> tuple[int, str, str]:
    """Run a Slurm command; (returncode, stdout, stderr). A missing command or a timeout raises SlurmError."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            env=env,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        raise SlurmError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    try:
        out, err = await asyncio.wait_for(
            proc.communicate(stdin.encode() if stdin is not None else None), timeout
        )
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise SlurmError(f"{argv[0]} did not answer within {timeout:.0f} s") from None
    return proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")


class SlurmLauncher(Launcher):
    name = "slurm"

    def __init__(self, events: LauncherEvents, options: SlurmOptions) -> None:
        super().__init__(events)
        self.options = options
        self._tracked: dict[str, Tracked] = {}  # ref -> the sim its job runs
        self._by_sim: dict[str, str] = {}  # sim_id -> ref
        self._cancel_before_ref: set[str] = set()  # sims cancelled while their sbatch was running
        self._to_cancel: set[str] = set()
        self._cancel_task: asyncio.Task | None = None
        self._poller: asyncio.Task | None = None
        self._tasks: set[asyncio.Task] = set()
        self._accounting: bool | None = None  # unknown until sacct is first asked

    # --- the Launcher interface -------------------------------------------------------------

    async def submit(self, sims: list[SimSpec]) -> None:
        entries: dict[tuple[str, str], list[SimSpec]] = {}
        for spec in sims:  # one array per entry; a sharded entry's shards are each their own
            entries.setdefault((spec.run_id, array_label(spec)), []).append(spec)
        self.options.output_dir.mkdir(parents=True, exist_ok=True)
        await asyncio.gather(*(self._submit_entry(specs) for specs in entries.values()))
        self._ensure_poller()

    async def resume(self, pending: list[SimSpec], active: list[tuple[SimSpec, str | None]]) -> None:
        for spec, ref in active:
            if ref and array_job_id(ref):
                self._track(spec.sim_id, ref)
            else:
                await self._report(spec.sim_id, None, "no Slurm job id was recorded for this sim")
        if pending:
            await self.submit(await self._adopt(pending))
        self._ensure_poller()

    async def _adopt(self, pending: list[SimSpec]) -> list[SimSpec]:
        """Sims whose sbatch went through just before the last server died, before their job ids
        were recorded: found by job name and tracked, not submitted twice. Returns the others."""
        names = sorted({job_name(ArrayJob(s.run_id, array_label(s), ())) for s in pending})
        try:
            code, out, _ = await run_command(
                ["squeue", "-h", "-r", "--states=all", "-o", ADOPT_FORMAT, "--name=" + ",".join(names)]
            )
        except SlurmError:
            return pending
        found = adoptable_tasks(out) if code == 0 else {}
        rest, adopted = [], {}
        for spec in pending:
            ref = found.get((spec.run_id, array_label(spec), spec.replica))
            if ref is None:
                rest.append(spec)
                continue
            log.info("sim %s: found its Slurm job %s submitted before the restart", spec.sim_id, ref)
            self._track(spec.sim_id, ref)
            adopted[spec.sim_id] = ref
        if adopted:
            try:
                await self.events.queued(adopted)
            except Exception:
                log.exception("recording the Slurm job ids found after the restart failed")
        return rest

    async def cancel(self, sim_id: str, launcher_ref: str | None) -> None:
        ref = self._by_sim.get(sim_id) or launcher_ref
        if not ref:
            self._cancel_before_ref.add(sim_id)  # its sbatch has not returned yet
            return
        self._to_cancel.add(ref)
        if self._cancel_task is None or self._cancel_task.done():
            self._cancel_task = self._spawn(self._cancel_batch())

    def status(self) -> LauncherStatus:
        """Cascade's jobs only: what else waits in the partition is the cluster's business (and
        one more squeue call per request)."""
        running = sum(1 for job in self._tracked.values() if job.started)
        return LauncherStatus(
            name="slurm",
            running=running,
            queued=len(self._tracked) - running,
            partition=self.options.partition,
        )

    async def close(self) -> None:
        """Stop watching; the jobs go on and report to the next server."""
        tasks = [t for t in (self._poller, self._cancel_task) if t is not None] + list(self._tasks)
        if self._cancel_task is not None and not self._cancel_task.done():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self._cancel_task), COMMAND_TIMEOUT_S)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # --- submitting ---------------------------------------------------------------------------

    async def _submit_entry(self, specs: list[SimSpec]) -> None:
        job = ArrayJob(
            run_id=specs[0].run_id,
            gpu_config=array_label(specs[0]),
            sim_ids=tuple(s.sim_id for s in specs),
            replicas=tuple(s.replica for s in specs),
        )
        # The job gets exactly these variables (names only on the command line; values from
        # sbatch's environment), whatever the server's own environment holds.
        job_env = {name: os.environ[name] for name in FORWARDED_WORKER_SETTINGS if os.environ.get(name)}
        job_env.update({k: v for k, v in specs[0].env.items() if k != "CASCADE_SIM_ID"})
        job_env["PYTHONUNBUFFERED"] = "1"
        argv = sbatch_argv(
            job,
            sorted(job_env),
            self.options.output_dir,
            partition=self.options.partition,
            account=self.options.account,
            time_limit=self.options.time_limit,
            extra=self.options.extra_args,
        )
        try:
            code, out, err = await run_command(
                argv,
                stdin=batch_script(job, self.options.worker_command, self.options.output_dir),
                env={**os.environ, **job_env},
            )
            if code != 0:
                raise SlurmError(slurm_message(err, "sbatch"))
            job_id = parse_sbatch_output(out)
        except SlurmError as exc:
            log.error("sbatch for run %s, %s failed: %s", job.run_id, job.gpu_config, exc)
            for spec in specs:
                await self._report(spec.sim_id, None, f"sbatch refused the job: {exc}")
            return
        log.info("run %s, %s: Slurm job array %s (%d sims)", job.run_id, job.gpu_config, job_id, len(specs))
        refs = {spec.sim_id: task_ref(job_id, task) for task, spec in enumerate(specs)}
        for sim_id, ref in refs.items():
            self._track(sim_id, ref)
            if sim_id in self._cancel_before_ref:
                self._cancel_before_ref.discard(sim_id)
                await self.cancel(sim_id, ref)
        try:
            await self.events.queued(refs)
        except Exception:
            log.exception("run %s, %s: recording the Slurm job ids failed", job.run_id, job.gpu_config)

    def _track(self, sim_id: str, ref: str) -> None:
        self._tracked[ref] = Tracked(sim_id=sim_id, ref=ref)
        self._by_sim[sim_id] = ref

    def _untrack(self, ref: str) -> None:
        tracked = self._tracked.pop(ref, None)
        if tracked is not None:
            self._by_sim.pop(tracked.sim_id, None)

    # --- watching -----------------------------------------------------------------------------

    def _ensure_poller(self) -> None:
        if self._poller is None or self._poller.done():
            self._poller = asyncio.create_task(self._poll_forever())

    async def _poll_forever(self) -> None:
        while True:
            await asyncio.sleep(self.options.poll_s)
            if not self._tracked:
                continue
            try:
                await self.poll_once()
            except Exception:
                log.exception("watching the Slurm jobs")

    async def poll_once(self) -> None:
        """One squeue for every tracked job; apply what it shows."""
        refs = list(self._tracked)
        jobs = await self._squeue(refs)
        if jobs is None:
            return  # Slurm did not answer: keep the jobs, ask again next time
        ended: list[Tracked] = []
        for ref in refs:
            tracked = self._tracked.get(ref)
            if tracked is None:
                continue
            job = jobs.get(ref)
            if job is None or job.final:
                if job is not None:
                    tracked.last = job
                ended.append(tracked)
                continue
            if job.started and not tracked.started:
                tracked.started = True
                await self._call(self.events.launching(tracked.sim_id, ref), tracked.sim_id)
            if tracked.last is None or tracked.last.label() != job.label():
                await self._call(self.events.queue_state(tracked.sim_id, job.label()), tracked.sim_id)
            tracked.last = job
        if ended:
            await self._finish(ended)

    async def _squeue(self, refs: list[str]) -> dict[str, JobState] | None:
        job_ids = sorted({j for j in (array_job_id(r) for r in refs) if j}, key=int)
        try:
            code, out, err = await run_command(
                ["squeue", "-h", "-r", "--states=all", "-o", SQUEUE_FORMAT, "-j", ",".join(job_ids)]
            )
        except SlurmError as exc:
            log.warning("squeue: %s", exc)
            return None
        if code != 0:
            if "Invalid job id" in err:
                return {}  # every one of them has left the queue (MinJobAge passed)
            log.warning("squeue failed: %s", slurm_message(err, "squeue"))
            return None
        return parse_squeue(out)

    async def _finish(self, ended: list[Tracked]) -> None:
        """Jobs that ended: a sim without a final report fails with Slurm's reason."""
        accounted = await self._sacct([t.ref for t in ended])
        for tracked in ended:
            self._untrack(tracked.ref)
            status = self._exit_status(tracked.ref)
            last = accounted.get(tracked.ref) or tracked.last
            if status is None and last is not None:
                status = last.exit_code
            await self._report(tracked.sim_id, status, failure_reason(tracked.ref, last, status))
            if last is not None and last.final and last.state not in ("COMPLETED", "FAILED"):
                # CANCELLED, TIMEOUT, OUT_OF_MEMORY, ...: the worker saw only a signal; say why.
                await self._call(
                    self.events.ended_by(tracked.sim_id, f"Slurm job {tracked.ref} {last.state}"),
                    tracked.sim_id,
                )

    async def _sacct(self, refs: list[str]) -> dict[str, JobState]:
        """Final states from accounting, when the cluster keeps it ({} when it does not)."""
        if self._accounting is False:
            return {}
        try:
            code, out, err = await run_command(
                ["sacct", "-n", "-X", "-P", "-o", SACCT_FIELDS, "-j", ",".join(refs)]
            )
        except SlurmError:
            self._accounting = False
            return {}
        if code != 0:
            if "accounting storage is disabled" in err.lower():
                self._accounting = False
            return {}
        self._accounting = True
        return parse_sacct(out)

    def _exit_status(self, ref: str) -> int | None:
        """The worker's exit status, from the file the job script writes (shared filesystems)."""
        try:
            return parse_exit_file((self.options.output_dir / f"{ref}.exit").read_text())
        except OSError:
            return None

    # --- cancelling ---------------------------------------------------------------------------

    async def _cancel_batch(self) -> None:
        await asyncio.sleep(CANCEL_BATCH_S)
        refs, self._to_cancel = sorted(self._to_cancel), set()
        if not refs:
            return
        try:
            code, _, err = await run_command(["scancel", *refs])
        except SlurmError as exc:
            log.error("scancel %s: %s", " ".join(refs), exc)
            return
        if code != 0:
            log.warning("scancel %s: %s", " ".join(refs), slurm_message(err, "scancel"))

    # --- helpers ------------------------------------------------------------------------------

    async def _report(self, sim_id: str, exit_code: int | None, message: str) -> None:
        await self._call(self.events.exited(sim_id, exit_code, message), sim_id)

    @staticmethod
    async def _call(coro, sim_id: str) -> None:
        try:
            await coro
        except Exception:
            log.exception("sim %s: recording what Slurm reported failed", sim_id)

    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task
