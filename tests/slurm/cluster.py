"""A real single-node Slurm cluster (munge + slurmctld + slurmd on this host) for the session
(the `slurm_cluster` fixture in tests/conftest.py), and the settings of a server that uses it.

`slurm-single-node.sh up` starts the daemons (`.ci/run` installs Debian's `slurm-wlm` and
`munge`; pytest never installs anything); the cluster comes down when the session ends (unless it
was already running before: then it is someone else's, and it is left alone). Tests skip, saying
how to get it, where Slurm is not installed or the daemons cannot start (not root).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parent / "slurm-single-node.sh"
# CPUs the node advertises: more than the host has (the script's config_overrides allows it),
# so the six sims of a 3 x 2 run start together and a larger run leaves some PENDING.
CPUS = 8


def _script(command: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SCRIPT), command], env={**os.environ, **env}, capture_output=True, text=True, timeout=600
    )


def _missing() -> str | None:
    """Why this machine cannot run the single-node cluster, or None."""
    if not (shutil.which("sbatch") and shutil.which("munged") and shutil.which("slurmctld")):
        return "Slurm is not installed (apt-get install slurm-wlm munge; .ci/run does it)"
    if os.geteuid() != 0:
        return "the single-node Slurm's daemons need root (run the suite as root, as .ci/run does)"
    return None


def cluster_for_session() -> Iterator[None]:
    reason = _missing()
    if reason:
        pytest.skip(reason)
    was_up = (
        shutil.which("squeue") is not None
        and subprocess.run(["scontrol", "ping"], capture_output=True, text=True).stdout.count("UP") > 0
    )
    if not was_up:
        up = _script("up", SLURM_CPUS=str(CPUS), SLURM_NO_INSTALL="1")
        assert up.returncode == 0, f"the single-node Slurm did not come up:\n{up.stderr}"
    yield
    if not was_up:
        _script("down")


def squeue_ids() -> set[str]:
    """Job ids (JOBID_TASK) Slurm still has queued or running."""
    out = subprocess.run(
        ["squeue", "-h", "-r", "-o", "%i"], capture_output=True, text=True, check=True
    ).stdout
    return {line.strip() for line in out.splitlines() if line.strip()}


def scontrol(*args: str) -> str:
    done = subprocess.run(["scontrol", *args], capture_output=True, text=True)
    return done.stdout + done.stderr


def slurm_settings(tmp_path: Path, **overrides: Any) -> dict[str, Any]:
    """An in-process server's settings for the slurm launcher on this cluster (`make_server`)."""
    values: dict[str, Any] = dict(
        launcher="slurm",
        slurm_local=True,
        slurm_poll_s=1.0,
        replay_speed=25.0,
        slurm_output_dir=tmp_path / "slurm-out",
    )
    values.update(overrides)
    return values


# The same for `cascade serve` as a process (tests/e2e/conftest.py's `start_serve`), its jobs
# replaying at 6x as the local launcher's do there: a run of 15 kernels is midway for seconds.
SLURM_LAUNCHER = {
    "CASCADE_LAUNCHER": "slurm",
    "CASCADE_SLURM_LOCAL": "1",
    "CASCADE_SLURM_POLL_S": "1",
    "CASCADE_REPLAY_SPEED": "6",
}
