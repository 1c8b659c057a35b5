"""A sim's parser rebuilt from the database: from its saved state, which is saved every few
chunks, and the stored chunks after it; or, when that state cannot be read (a damaged page),
from all the sim's stored chunks. The chunks after it store and parse, the kernels are those of
an undamaged run, and the log is whole. Before, a damaged state failed every later chunk for
good and the sim ended with the kernels it had."""

from __future__ import annotations

import os
import pickle
import signal

import pytest

from cascade_server.appkeys import INGEST_KEY
from cascade_server.ingest.log_ingest import LogIngest
from cascade_server.ingest.parsing import STATE_EVERY
from cascade_server.storage.codecs import pack_state, unpack_state
from tests.helpers import create_run, recorded_log, recording
from tests.server.test_ingest_events import QV100_CYCLES, chunks, half_a_sim, ingest, post_log  # noqa: F401


def flip_a_bit(blob: bytes) -> bytes:
    middle = len(blob) // 2
    return blob[:middle] + bytes([blob[middle] ^ 0x10]) + blob[middle + 1 :]


def wrong_shape(blob: bytes) -> bytes:
    state = unpack_state(blob)
    assert state is not None
    return pack_state({**state, "block": ["not", "a", "block"]})


DAMAGE = {
    "a bit flipped in the compressed frame": flip_a_bit,
    "bytes that are no blob at all": lambda blob: b"\x00garbage" * 10,
    "a plain pickle of something else": lambda blob: pickle.dumps([1, 2, 3], protocol=5),
    "a readable state of the wrong shape": wrong_shape,
    "a pickle of nothing": lambda blob: b"N.",
    "a pickle that names a function": lambda blob: pickle.dumps(print),
}


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=list(DAMAGE))
async def test_a_damaged_parser_state_is_rebuilt_from_the_stored_chunks(ingest, damage):  # noqa: F811
    sim_id, parts, half, saved = await half_a_sim(ingest)
    db = ingest.store.db.w
    await db.execute("UPDATE sims SET parser_state=? WHERE id=?", (damage(saved), sim_id))
    await db.commit()
    await ingest.restart()  # the workers' parsers in memory go: the next chunk needs the state
    async with ingest.client() as http:
        await post_log(http, sim_id, parts, order=range(half, len(parts)))
        results = (await http.get(f"/api/sims/{sim_id}/results")).json()
        assert [k["gpu_sim_cycle"] for k in results["kernels"]] == QV100_CYCLES
        assert results["sim"]["kernels_done"] == len(QV100_CYCLES)
        log = await http.get(f"/api/sims/{sim_id}/log")
        assert log.content == recording("SM7_QV100")


@pytest.mark.parametrize(
    "restart_at", [1, STATE_EVERY - 1, STATE_EVERY, STATE_EVERY + 1, 2 * STATE_EVERY + 5]
)
async def test_a_parser_not_kept_reads_again_from_its_saved_state_whatever_the_chunk(ingest, restart_at):  # noqa: F811
    """The state is saved every STATE_EVERY chunks: a parser that is not kept (a restart, a
    group rolled back) is rebuilt from it and reads the stored chunks after it again."""
    parts = chunks(recorded_log("SM7_QV100"), 500)
    async with ingest.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        sim_id = run["sims"][0]["id"]
        await post_log(http, sim_id, parts[:restart_at])
    db = ingest.store.db.w
    async with db.execute("SELECT next_seq, parser_state_seq FROM sims WHERE id=?", (sim_id,)) as cur:
        next_seq, state_seq = await cur.fetchone()
    assert next_seq == restart_at and state_seq == restart_at // STATE_EVERY * STATE_EVERY
    fresh = LogIngest(ingest.store)  # parses here, with no parser kept
    for seq in range(restart_at, len(parts)):
        await fresh.append_log(sim_id, seq, parts[seq])
    async with ingest.client() as http:
        results = (await http.get(f"/api/sims/{sim_id}/results")).json()
    assert [k["gpu_sim_cycle"] for k in results["kernels"]] == QV100_CYCLES
    assert results["sim"]["kernels_done"] == len(QV100_CYCLES)


async def test_parse_workers_killed_under_a_chunk_cost_it_nothing(ingest):  # noqa: F811
    """A parse worker that dies (killed, out of memory) is replaced and the group parsed again
    on the new ones: the chunk gets its 204 (a second death in a row would be a 503, which a
    simulator retries), and the kernels and log are those of an undisturbed run."""
    parts = chunks(recorded_log("SM7_QV100"), 1000)
    pool = ingest.app[INGEST_KEY].parser.pool
    assert pool is not None
    async with ingest.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        sim_id = run["sims"][0]["id"]
        for seq, lines in enumerate(parts):
            if seq % 7 == 3:
                for worker in pool._workers:
                    os.kill(worker.process.pid, signal.SIGKILL)
                    worker.process.join(timeout=10)
            resp = await http.post(f"/api/sims/{sim_id}/logs", json={"seq": seq, "lines": lines})
            assert resp.status_code == 204, resp.text
        results = (await http.get(f"/api/sims/{sim_id}/results")).json()
        assert [k["gpu_sim_cycle"] for k in results["kernels"]] == QV100_CYCLES
        assert (await http.get(f"/api/sims/{sim_id}/log")).content == recording("SM7_QV100")
