"""A real single-node Slurm cluster (munge + slurmctld + slurmd on this host) for the session
(the `slurm_cluster` fixture in tests/conftest.py).

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
