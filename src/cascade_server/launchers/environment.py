"""The environment a worker starts with: what it needs, and nothing else of the server's.

The server's own environment holds things no sim should see (S3 credentials, an operator's other
secrets), and on a shared sim host a process's environment is readable by the same user's
processes (`/proc/<pid>/environ`): a worker gets the sim's `CASCADE_*` values (`SimSpec.env`),
the worker settings an operator set on the server, and the few system variables a program needs
to run. The worker in turn hides `CASCADE_*` (the token) from the simulator.
"""

from __future__ import annotations

from collections.abc import Mapping

# What a process (and Accel-Sim's shared libraries, and Python) needs to run at all.
SYSTEM_VARIABLES = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TMPDIR",
        "LD_LIBRARY_PATH",
        "CUDA_INSTALL_PATH",
        "PYTHONPATH",
    }
)
SYSTEM_PREFIXES = ("LC_",)
# Worker settings (docs/reference/configuration.md, The worker) an operator sets on the server for its workers.
WORKER_SETTINGS = frozenset(
    {
        "CASCADE_HEARTBEAT_INTERVAL_S",
        "CASCADE_KILL_GRACE_S",
        "CASCADE_GIVE_UP_S",
        "CASCADE_SCRATCH_DIR",
        "CASCADE_KERNEL_WALL_LIMIT_S",
        # the limits every simulator runs within (cascade_worker/sim_limits.py)
        "CASCADE_SIM_MEMORY_LIMIT_MB",
        "CASCADE_SIM_CPU_LIMIT_S",
        "CASCADE_SIM_FILE_LIMIT_MB",
        "CASCADE_SIM_LOG_LIMIT_MB",  # the server's own log limit too (its ingest)
    }
)


def worker_environment(server_env: Mapping[str, str], sim_env: Mapping[str, str]) -> dict[str, str]:
    """The worker's whole environment: the kept part of `server_env`, then the sim's own."""
    kept = {
        name: value
        for name, value in server_env.items()
        if name in SYSTEM_VARIABLES or name in WORKER_SETTINGS or name.startswith(SYSTEM_PREFIXES)
    }
    return {**kept, **sim_env}
