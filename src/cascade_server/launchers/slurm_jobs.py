"""What the Slurm launcher says to Slurm and reads back: pure text in, text out, no I/O.

One `sbatch` per run entry submits a job array whose task N runs the worker of the entry's N-th
sim; a sim's `launcher_ref` is `JOBID_N`. The batch script names the sims but holds no secret: the
worker's settings (the token among them) reach the job by `--export=NONE,NAME,...`, names only,
which Slurm fills from sbatch's own environment (a value with a comma survives that; it does not
survive `--export=NAME=value`, and a command line or script would show it in `scontrol`). The
script records the worker's exit status in `<output dir>/<ref>.exit`, because `squeue` forgets a
finished job after `MinJobAge` and a cluster without accounting has no `sacct` to ask.
See `reference/infra.md` (section 1) for the Slurm behaviour this relies on.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

# squeue's %T for a job that will not run again. (COMPLETING is not one: the job is still
# cleaning up, and its exit-code file may not be written yet.)
FINAL_STATES = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "REVOKED",
        "SPECIAL_EXIT",
        "TIMEOUT",
    }
)
# States in which the job has not started yet: its sim stays `pending`.
WAITING_STATES = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"})

# One squeue line per array task (`-r`): job id (JOBID_TASK), state, reason.
SQUEUE_FORMAT = "%i|%T|%r"
SACCT_FIELDS = "JobID,State,ExitCode"

_JOB_ID = re.compile(r"^\d+$")
_REF = re.compile(r"^(\d+)(?:_(\d+))?$")


class SlurmError(Exception):
    """A Slurm command failed; the message is Slurm's own, without the command's prefix."""


@dataclass(frozen=True)
class JobState:
    """One job (array task) as squeue or sacct shows it."""

    ref: str
    state: str
    reason: str = ""
    exit_code: int | None = None

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES

    @property
    def started(self) -> bool:
        return self.state not in WAITING_STATES

    def label(self) -> str:
        """What the UI shows for a queued or running job: `PENDING (Resources)`, `RUNNING`."""
        reason = self.reason.strip()
        if reason and reason not in ("None", "(null)"):
            return f"{self.state} ({reason.strip('()')})"
        return self.state


@dataclass(frozen=True)
class ArrayJob:
    """One sbatch: the sims of one run entry, task N for sims[N] (whose replica is replicas[N])."""

    run_id: str
    gpu_config: str
    sim_ids: tuple[str, ...]
    replicas: tuple[int, ...] = ()


def job_name(job: ArrayJob) -> str:
    """`cascade.<run>.<config>`: with the task id (the sim's place in the entry) it names the sim."""
    return f"cascade.{job.run_id}.{job.gpu_config}"


def task_ref(job_id: str, task: int) -> str:
    return f"{job_id}_{task}"


def array_job_id(ref: str) -> str | None:
    """The job id squeue and scancel take for a `launcher_ref` (`12_3` -> `12`); None if it is not one."""
    match = _REF.match(ref.strip())
    return match.group(1) if match else None


def batch_script(job: ArrayJob, worker_command: list[str], output_dir: Path) -> str:
    """The job's script: picks the task's sim, runs the worker, records its exit status."""
    sims = " ".join(shlex.quote(s) for s in job.sim_ids)
    exit_file = shlex.quote(str(output_dir)) + '/"${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}.exit"'
    return "\n".join(
        [
            "#!/bin/bash",
            f"# Cascade run {job.run_id}, config {job.gpu_config}: array task N runs sims[N].",
            "# Written by `cascade serve` (CASCADE_LAUNCHER=slurm). The worker's settings come in the",
            "# job's environment (--export), never in this script.",
            f"sims=({sims})",
            'export CASCADE_SIM_ID="${sims[$SLURM_ARRAY_TASK_ID]}"',
            "# A cancel or time limit sends TERM to the worker too; the shell waits for it to report.",
            "trap true TERM",
            shlex.join(worker_command),
            "status=$?",
            f'echo "$status" > {exit_file}.tmp && mv {exit_file}.tmp {exit_file}',
            'exit "$status"',
            "",
        ]
    )


def sbatch_argv(
    job: ArrayJob,
    env_names: list[str],
    output_dir: Path,
    *,
    partition: str | None = None,
    account: str | None = None,
    time_limit: str | None = None,
    extra: list[str] | None = None,
) -> list[str]:
    """`sbatch` for one entry; the script comes on stdin. Extra arguments go last, so they win."""
    argv = [
        "sbatch",
        "--parsable",
        f"--job-name={job_name(job)}",
        f"--array=0-{len(job.sim_ids) - 1}",
        # Absolute paths: relative ones land in sbatch's working directory (infra.md).
        f"--output={output_dir}/%A_%a.out",
        f"--error={output_dir}/%A_%a.err",
        f"--chdir={output_dir}",
        "--export=" + ",".join(["NONE", *env_names]),
    ]
    if job.replicas:
        # Which replica each task runs, for a server that restarts before it recorded the job ids
        # (`adoptable_tasks`); sim ids would not fit Slurm's limit on a comment.
        argv.append("--comment=replicas:" + ",".join(str(r) for r in job.replicas))
    if partition:
        argv.append(f"--partition={partition}")
    if account:
        argv.append(f"--account={account}")
    if time_limit:
        argv.append(f"--time={time_limit}")
    return argv + list(extra or [])


# squeue line of a job found by name after a restart: JOBID_TASK, name, comment
ADOPT_FORMAT = "%i|%j|%k"


def adoptable_tasks(stdout: str) -> dict[tuple[str, str, int], str]:
    """Lines of `squeue -h -r --name=... -o '%i|%j|%k'` -> {(run, config, replica): JOBID_TASK}:
    jobs a server submitted just before it died, before it recorded their ids."""
    found: dict[tuple[str, str, int], str] = {}
    for line in stdout.splitlines():
        parts = line.strip().split("|", 2)
        if len(parts) != 3:
            continue
        ref, name, comment = parts
        match, named = _REF.match(ref), re.match(r"^cascade\.([^.]+)\.(.+)$", name)
        if not (match and match.group(2) is not None and named and comment.startswith("replicas:")):
            continue
        try:
            replicas = [int(r) for r in comment.removeprefix("replicas:").split(",")]
            replica = replicas[int(match.group(2))]
        except (ValueError, IndexError):
            continue
        found[(named.group(1), named.group(2), replica)] = ref
    return found


def parse_sbatch_output(stdout: str) -> str:
    """`sbatch --parsable` prints `JOBID` or `JOBID;CLUSTER`."""
    job_id = stdout.strip().splitlines()[-1].split(";")[0].strip() if stdout.strip() else ""
    if not _JOB_ID.match(job_id):
        raise SlurmError(f"sbatch printed no job id: {stdout.strip()!r}")
    return job_id


def slurm_message(stderr: str, command: str) -> str:
    """Slurm's error in one line: `sbatch: error: Batch job submission failed: X` -> that sentence."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    cleaned = [re.sub(rf"^{re.escape(command)}: (error: )?", "", line) for line in lines]
    return "; ".join(cleaned) or f"{command} failed without a message"


def parse_squeue(stdout: str) -> dict[str, JobState]:
    """Lines of `squeue -h -r -o '%i|%T|%r'` by ref."""
    jobs: dict[str, JobState] = {}
    for line in stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) < 2 or not _REF.match(parts[0]):
            continue
        jobs[parts[0]] = JobState(ref=parts[0], state=parts[1], reason=parts[2] if len(parts) > 2 else "")
    return jobs


def parse_exit_code(text: str) -> int | None:
    """Slurm's `ExitCode` `N:S`: the status, or 128+S when a signal S ended the job (as a shell says)."""
    match = re.match(r"^\s*(\d+):(\d+)\s*$", text)
    if not match:
        return None
    status, signum = int(match.group(1)), int(match.group(2))
    return 128 + signum if signum else status


def parse_sacct(stdout: str) -> dict[str, JobState]:
    """Lines of `sacct -n -X -P -o JobID,State,ExitCode` by ref (`CANCELLED by 0` -> CANCELLED)."""
    jobs: dict[str, JobState] = {}
    for line in stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) < 3 or not _REF.match(parts[0]):
            continue
        state = parts[1].split()[0] if parts[1].split() else ""
        jobs[parts[0]] = JobState(ref=parts[0], state=state, exit_code=parse_exit_code(parts[2]))
    return jobs


def parse_exit_file(text: str) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        return None


def failure_reason(ref: str, last: JobState | None, exit_status: int | None) -> str:
    """Why a sim whose job ended without the worker's final report failed, in Slurm's words.

    `last` is the job's final state (sacct, or what squeue last showed); `exit_status` the
    worker's, from the job's exit-code file.
    """
    if last is not None and last.final:  # CANCELLED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, FAILED, ...
        reason = f"Slurm job {ref} {last.state}"
    elif last is not None:
        reason = f"Slurm job {ref} left the queue (last seen {last.label()})"
    else:
        reason = f"Slurm job {ref} is no longer known to Slurm"
    if exit_status is not None:
        return f"{reason}; the worker exited with status {exit_status} without a final report"
    return f"{reason}; the worker sent no final report"
