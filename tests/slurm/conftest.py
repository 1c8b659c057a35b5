"""The Slurm tier's tests are end to end too: the e2e tier's factories (tests/e2e/conftest.py),
and a server on the slurm launcher."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from tests.conftest import LiveServer, ready_trace
from tests.e2e.conftest import seeded_data_dir, start_serve
from tests.slurm.cluster import slurm_settings

__all__ = ["seeded_data_dir", "slurm_server", "start_serve"]


@pytest.fixture
def slurm_server(make_server, worker_env, tmp_path: Path) -> Callable[..., Awaitable[LiveServer]]:
    """`slurm_server(**settings)`: the in-process server on the slurm launcher of the session's
    cluster (`slurm_settings`, with `worker_env` for the jobs), holding the ready trace."""

    async def make(**settings) -> LiveServer:
        server = await make_server(**slurm_settings(tmp_path, **settings))
        await server.store.traces.put_trace(ready_trace())
        return server

    return make
