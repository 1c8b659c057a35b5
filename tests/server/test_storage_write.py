"""The write helper: a write commits whole or not at all, and its events follow its commit."""

from __future__ import annotations

import sqlite3

import pytest

from cascade_core.models import GpuConfig, RunEntry, SimEvent
from cascade_server.storage import Store
from tests.conftest import ready_trace

QV100 = {"SM7_QV100": GpuConfig(name="SM7_QV100", arch="sm_70", core_clock_mhz=1132.0)}


def committed_count(store: Store, table: str) -> int:
    """Rows another process would see: a connection of its own reads only committed data."""
    with sqlite3.connect(store.path) as conn:
        return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


async def test_a_write_that_fails_half_way_leaves_nothing_for_the_next_commit(store: Store) -> None:
    # The run's INSERT runs, then its sims fail: no config is known for the second entry.
    entries = [RunEntry(gpu_config="SM7_QV100", count=1), RunEntry(gpu_config="SM7_NOPE", count=1)]
    with pytest.raises(KeyError):
        await store.runs.create_run(ready_trace(), entries, QV100)

    await store.db.set_meta("after", "a later writer commits")  # would commit a left-open INSERT
    assert await store.db.get_meta("after") == "a later writer commits"
    assert committed_count(store, "runs") == 0
    assert committed_count(store, "sims") == 0
    assert await store.runs.list_runs() == []

    run = await store.runs.create_run(ready_trace(), entries[:1], QV100)  # the writer is usable again
    assert [r.id for r in await store.runs.list_runs()] == [run.id]


async def test_events_are_published_after_the_commit_and_never_for_a_rolled_back_write(store: Store) -> None:
    run = await store.runs.create_run(ready_trace(), [RunEntry(gpu_config="SM7_QV100", count=1)], QV100)
    subscriber = store.db.broker.subscribe(run.id)
    event = SimEvent(sim=run.sims[0])

    with pytest.raises(RuntimeError, match="half-way"):
        async with store.db.write() as tx:
            await tx.conn.execute("UPDATE sims SET state='running' WHERE id=?", (run.sims[0].id,))
            tx.publish(run.id, [event])
            raise RuntimeError("half-way")
    assert subscriber.frames == []
    assert (await store.runs.require_sim(run.sims[0].id)).state == "pending"

    async with store.db.write() as tx:
        await tx.conn.execute("UPDATE sims SET error='x' WHERE id=?", (run.sims[0].id,))
        tx.publish(run.id, [event])
        assert subscriber.frames == []  # not before the commit
    assert len(subscriber.frames) == 1
    sim = await store.runs.require_sim(run.sims[0].id)
    assert (sim.error, sim.state) == ("x", "pending")  # the rolled-back UPDATE stayed undone
