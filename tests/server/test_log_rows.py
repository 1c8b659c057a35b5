"""The rows ingest hands storage for a sim's log (storage/logs.py): built by storage's own
functions, typed, pickled as their values (the parse workers send them back in numbers), and
stored by `save_parsed` as the columns they name."""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cascade_core.models import GpuConfig, RunEntry, SimMetrics
from cascade_server.ingest.parser.accelsim_log import ParsedKernel
from cascade_server.storage import Store
from cascade_server.storage.codecs import chunk_text, unpack_state, unpack_stats, unpack_text
from cascade_server.storage.logs import (
    KERNEL_COLUMNS,
    ChunkRow,
    KernelRow,
    ProgressRow,
    chunk_row,
    kernel_row,
    progress_row,
)
from tests.conftest import ready_trace

QV100 = {"SM7_QV100": GpuConfig(name="SM7_QV100", arch="sm_70", core_clock_mhz=1132.0)}
KERNEL = ParsedKernel(3, "gemm", 7, 6146, 12_000, 1.95, 5429.3, {"gpu_sim_cycle": 6146.0, "name": "gemm"})


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    store = await Store(tmp_path / "cascade.db").open()
    await store.traces.put_trace(ready_trace())
    yield store
    await store.close()


LATEST = SimMetrics(gpu_tot_ipc=1.5)
CHUNK = chunk_row("sim_a", 4, chunk_text(["one", "\udcff lone surrogate", ""]))
KERNEL_ROW = kernel_row("sim_a", KERNEL)
PROGRESS = progress_row("sim_a", 5, 1, "gemm", LATEST, ["one", "two"])
SAVED = progress_row("sim_a", 5, 1, None, LATEST, [], {"block": None, "kernels": 1})


@pytest.mark.parametrize("row", [CHUNK, KERNEL_ROW, PROGRESS, SAVED], ids=lambda row: type(row).__name__)
def test_a_row_pickles_as_itself_and_cannot_change(row: ChunkRow | KernelRow | ProgressRow) -> None:
    assert pickle.loads(pickle.dumps(row, protocol=5)) == row
    for field in dataclasses.fields(row):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(row, field.name, None)


def test_the_rows_hold_what_storage_reads_back() -> None:
    assert unpack_text(CHUNK.data) == "one\n\udcff lone surrogate\n\n"
    assert [f.name for f in dataclasses.fields(KERNEL_ROW)] == list(KERNEL_COLUMNS)
    assert (KERNEL_ROW.sim_id, KERNEL_ROW.kernel_index, KERNEL_ROW.kernel_name) == ("sim_a", 3, "gemm")
    assert unpack_stats(KERNEL_ROW.stats) == KERNEL.stats
    assert PROGRESS.parser_state is None and PROGRESS.log_tail == '["one", "two"]'
    assert SimMetrics.model_validate_json(PROGRESS.latest) == LATEST
    assert unpack_state(SAVED.parser_state) == {"block": None, "kernels": 1}


async def sim_row(store: Store, sim_id: str):
    async with store.db.r.execute(
        "SELECT next_seq, kernels_done, current_kernel, log_tail, parser_state, parser_state_seq"
        " FROM sims WHERE id=?",
        (sim_id,),
    ) as cur:
        return await cur.fetchone()


async def test_save_parsed_stores_the_rows_and_keeps_a_state_not_saved_again(store: Store) -> None:
    run = await store.runs.create_run(ready_trace(), [RunEntry(gpu_config="SM7_QV100", count=1)], QV100)
    sim_id = run.sims[0].id
    latest = SimMetrics()
    async with store.db.write() as tx:
        await store.logs.save_parsed(
            tx,
            [chunk_row(sim_id, 0, chunk_text(["a"])), chunk_row(sim_id, 1, chunk_text(["b"]))],
            [kernel_row(sim_id, KERNEL)],
            [progress_row(sim_id, 2, 1, "gemm", latest, ["a", "b"], {"at": 2})],
        )
    next_seq, done, current, tail, state, state_seq = await sim_row(store, sim_id)
    assert (next_seq, done, current, tail, state_seq) == (2, 1, "gemm", '["a", "b"]', 2)
    assert unpack_state(state) == {"at": 2}
    # Progress without a state: the state saved before stays, with the chunk it stands before.
    async with store.db.write() as tx:
        await store.logs.save_parsed(
            tx,
            [chunk_row(sim_id, 2, chunk_text(["c"]))],
            [],
            [progress_row(sim_id, 3, 1, None, latest, ["c"])],
        )
    next_seq, done, current, tail, state, state_seq = await sim_row(store, sim_id)
    assert (next_seq, current, state_seq) == (3, None, 2) and unpack_state(state) == {"at": 2}
    text = b"".join([part async for part in store.logs.iter_log(sim_id)])
    assert text == b"a\nb\nc\n"
    [stored] = await store.outputs.sim_kernels(sim_id)
    assert stored.model_dump() == {**KERNEL.to_stat(sim_id).model_dump(), "stats": KERNEL.stats}
