"""The simulator's environment: the worker's, without Cascade's own variables.

`CASCADE_TOKEN` lets whoever holds it drive the whole app; the simulator (Accel-Sim, or the
stand-in replay) needs nothing of Cascade's, and anything it runs, prints or dumps must not be
able to leak the token.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from cascade_core.simulator_layout import with_library_dir

HIDDEN_PREFIX = "CASCADE_"


def simulator_environment(worker_env: Mapping[str, str], library_dir: Path | None = None) -> dict[str, str]:
    """Also puts the simulator's own library folder first on LD_LIBRARY_PATH (real mode), so
    another CUDA that ld.so.conf lists cannot break it."""
    env = {name: value for name, value in worker_env.items() if not name.startswith(HIDDEN_PREFIX)}
    return with_library_dir(env, library_dir)
