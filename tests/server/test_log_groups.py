"""Log chunks are committed in groups across sims; one chunk that makes its group's write fail
(a value SQLite cannot store) fails only its own sim's chunks, never the other sims' chunks that
shared the transaction."""

from __future__ import annotations

import asyncio

from cascade_core.models import GpuConfig, RunDetail, RunEntry
from cascade_server.ingest.log_ingest import LogIngest
from cascade_server.storage import Store
from tests.conftest import ready_trace

QV100 = {"SM7_QV100": GpuConfig(name="SM7_QV100", arch="sm_70", core_clock_mhz=1132.0)}
TOO_BIG = 2**63  # one past SQLite's INTEGER range


async def launched_run(store: Store, count: int) -> RunDetail:
    """A run whose sims a launcher has taken (`launching`): a `pending` sim's chunks are refused."""
    run = await store.runs.create_run(ready_trace(), [RunEntry(gpu_config="SM7_QV100", count=count)], QV100)
    for sim in run.sims:
        await store.sim_states.mark_launching(sim.id, None)
    return run


async def log_text(store: Store, sim_id: str) -> str:
    return b"".join([part async for part in store.logs.iter_log(sim_id)]).decode()


async def test_a_poisoned_chunk_fails_alone_in_its_group(store: Store) -> None:
    ingest = LogIngest(store)
    run = await launched_run(store, 3)
    good_a, good_b, poisoned = (s.id for s in run.sims)
    # Queued together before the writer runs, so they are one group (one transaction).
    calls = [
        ingest.append_log(good_a, 0, ["a0"]),
        ingest.append_log(poisoned, 0, ["p0"]),
        ingest.append_log(good_b, 0, ["b0"]),
        ingest.append_log(poisoned, TOO_BIG, ["poison"]),
        ingest.append_log(good_a, 1, ["a1"]),
        ingest.append_log(good_b, 1, ["b1"]),
    ]
    results = await asyncio.gather(*calls, return_exceptions=True)

    assert [type(r).__name__ for r in results] == [
        "NoneType",
        "OverflowError",
        "NoneType",
        "OverflowError",
        "NoneType",
        "NoneType",
    ]
    assert await log_text(store, good_a) == "a0\na1\n"
    assert await log_text(store, good_b) == "b0\nb1\n"
    assert await log_text(store, poisoned) == ""  # its whole share of the group was refused
    # Its sim is not stuck: the next good chunk of the poisoned sim is stored and parsed.
    await ingest.append_log(poisoned, 0, ["p0 again"])
    assert await log_text(store, poisoned) == "p0 again\n"
    assert (await store.runs.require_sim(poisoned)).log_tail == ["p0 again"]
    assert (await store.runs.require_sim(good_a)).log_tail == ["a0", "a1"]


async def test_a_failing_group_of_one_sim_fails_once(store: Store) -> None:
    ingest = LogIngest(store)
    run = await launched_run(store, 1)
    sim_id = run.sims[0].id
    results = await asyncio.gather(
        ingest.append_log(sim_id, 0, ["x"]), ingest.append_log(sim_id, TOO_BIG, ["y"]), return_exceptions=True
    )
    assert all(isinstance(r, OverflowError) for r in results)
    await ingest.append_log(sim_id, 0, ["x"])
    assert await log_text(store, sim_id) == "x\n"


async def test_over_http_a_poisoned_chunk_amid_good_ones_from_several_sims(make_server) -> None:
    server = await make_server()
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        resp = await http.post(
            "/api/runs",
            json={"trace_id": "tinyformer-step-sm70", "entries": [{"gpu_config": "SM7_QV100", "count": 4}]},
        )
        sims = [s["id"] for s in resp.json()["sims"]]
        good, poisoned = sims[:3], sims[3]
        bodies = [
            (sim_id, {"seq": seq, "lines": [f"{sim_id} line {seq}"]}) for seq in range(20) for sim_id in good
        ]
        bodies.insert(len(bodies) // 2, (poisoned, {"seq": TOO_BIG, "lines": ["poison"]}))
        answers = await asyncio.gather(
            *(http.post(f"/api/sims/{sim_id}/logs", json=body) for sim_id, body in bodies)
        )
        statuses = {(sim_id, body["seq"]): a.status_code for (sim_id, body), a in zip(bodies, answers)}
        assert statuses.pop((poisoned, TOO_BIG)) >= 400
        assert set(statuses.values()) == {204}
        for sim_id in good:
            log = (await http.get(f"/api/sims/{sim_id}/log")).text
            assert log == "".join(f"{sim_id} line {seq}\n" for seq in range(20))
