"""The live events of a parse (ingest/live_events.py), alone: per chunk, its lines, the
kernels it completed (a shard's warm-up kernels are none), the sim's progress after it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cascade_core.models import GpuConfig, KernelEvent, LogEvent, RunEntry, SimEvent
from cascade_server.ingest.live_events import chunk_events
from cascade_server.ingest.parsing import ParseJob, Parsers
from cascade_server.ingest.shard_placement import ShardPlacement
from cascade_server.storage import Store
from cascade_server.storage.codecs import chunk_text
from tests.conftest import ready_trace
from tests.server.test_ingest_hostile_values import stats_block

QV100 = {"SM7_QV100": GpuConfig(name="SM7_QV100", arch="sm_70", core_clock_mhz=1132.0)}


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    store = await Store(tmp_path / "cascade.db").open()
    await store.traces.put_trace(ready_trace())
    yield store
    await store.close()


@pytest.mark.parametrize("warmup", [0, 1])
async def test_each_chunk_is_its_lines_its_kernels_and_the_progress_after_it(
    store: Store, warmup: int
) -> None:
    run = await store.runs.create_run(ready_trace(), [RunEntry(gpu_config="SM7_QV100", count=1)], QV100)
    sim_id = run.sims[0].id
    async with store.db.write() as tx:
        rows, _ = await store.logs.sim_rows(tx, [sim_id])
    first = ["starting", *stats_block("100", "1", "300"), *stats_block("200", "2", "600")]
    chunks = [chunk_text(first), chunk_text(["between kernels"]), chunk_text([])]
    job = ParseJob(sim_id, 0, 1132.0, None, chunks, True, ShardPlacement(5, warmup))
    [result] = Parsers().parse([job])
    events = chunk_events(rows[sim_id], job, result)

    kinds = [type(event).__name__ for event in events]
    own = 2 - warmup  # a warm-up kernel is stored, but it is the shard's own business
    assert kinds == [
        "LogEvent",
        *["KernelEvent"] * own,
        "SimEvent",
        "LogEvent",
        "SimEvent",
        "LogEvent",
        "SimEvent",
    ]
    logs = [event.lines for event in events if isinstance(event, LogEvent)]
    assert logs == [first, ["between kernels"], []]
    kernels = [event.stat for event in events if isinstance(event, KernelEvent)]
    expected = [(5, 100), (6, 200)] if warmup == 0 else [(5, 200)]  # placed at trace positions
    assert [(k.kernel_index, k.gpu_sim_cycle) for k in kernels] == expected
    sims = [event.sim for event in events if isinstance(event, SimEvent)]
    assert [sim.kernels_done for sim in sims] == [own] * 3
    assert [sim.log_tail[-1] for sim in sims] == [
        "gpgpu_silicon_slowdown = 368369x",
        *["between kernels"] * 2,
    ]
    assert all(sim.id == sim_id and sim.run_id == run.id for sim in sims)


async def test_chunks_that_never_arrived_have_no_log_event_and_the_sim_names_them(store: Store) -> None:
    """Issue 32: a closed gap's chunks went out as a `log` event of a line the server wrote; a
    log event is exactly what the simulator sent, so they have none, and the `sim` events say
    which chunks never arrived."""
    run = await store.runs.create_run(ready_trace(), [RunEntry(gpu_config="SM7_QV100", count=1)], QV100)
    sim_id = run.sims[0].id
    async with store.db.write() as tx:
        rows, _ = await store.logs.sim_rows(tx, [sim_id])
    chunks = [chunk_text(["sent 0"]), "", "", chunk_text(["sent 3"])]
    job = ParseJob(sim_id, 0, 1132.0, None, chunks, True)
    [result] = Parsers().parse([job])
    events = chunk_events(rows[sim_id], job, result, {1, 2}, {"missing_log_chunks": [(1, 2)]})
    assert [event.lines for event in events if isinstance(event, LogEvent)] == [["sent 0"], ["sent 3"]]
    sims = [event.sim for event in events if isinstance(event, SimEvent)]
    assert len(sims) == 4 and all(sim.missing_log_chunks == [(1, 2)] for sim in sims)
    assert sims[-1].model_dump(mode="json")["missing_log_chunks"] == [[1, 2]]
