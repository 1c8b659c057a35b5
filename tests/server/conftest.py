"""Fixtures of the server tests."""

from __future__ import annotations

import pytest

from tests.conftest import ready_trace


@pytest.fixture
async def core(make_server, accelsim_dir):
    server = await make_server(accelsim_dir=accelsim_dir)
    await server.store.traces.put_trace(ready_trace())
    await server.store.traces.put_trace(ready_trace("turing", arch="sm_75", kernels=3))
    return server
