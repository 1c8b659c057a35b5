"""Issue 19: a chunk after a gap waits for the gap to fill, but not for ever: at the sim's final
heartbeat, or GAP_WAIT_S after the gap opened, what arrived is parsed without the missing chunks.
Issue 32: the log stays exactly what the simulator sent (no line of the server's for the missing
chunks, in the log or its `log` events); the sim lists them (`missing_log_chunks`). A `pending`
sim takes its chunks (the spec's 204): its simulator can start before its launcher records it."""

from __future__ import annotations

import httpx

from cascade_core.models import RunEntry, utcnow
from cascade_server.appkeys import GPU_CONFIGS_KEY, INGEST_KEY
from cascade_server.ingest import gaps
from cascade_worker.client import SimClient
from cascade_worker.sim_session import Worker, WorkerPlan
from tests.conftest import TOKEN, ready_trace
from tests.helpers import create_run, wait_until
from tests.server.test_ingest_hostile_values import stats_block


def kernel(n: int) -> list[str]:
    return [f"output of kernel {n}", *stats_block(str(100 * n), str(n), "300")]


async def test_a_pending_sims_chunks_are_stored_as_for_any_sim(core) -> None:
    """Issue 32: a chunk for a `pending` sim got a 409; the spec answers 204."""
    run = await core.store.runs.create_run(
        ready_trace(), [RunEntry(gpu_config="SM7_QV100", count=1)], core.app[GPU_CONFIGS_KEY]
    )
    sim_id = run.sims[0].id
    async with core.client() as http:
        early = await http.post(f"/api/sims/{sim_id}/logs", json={"seq": 0, "lines": kernel(0)})
        assert early.status_code == 204, early.text
        sim = (await http.get(f"/api/runs/{run.id}")).json()["sims"][0]
        assert (sim["state"], sim["kernels_done"]) == ("pending", 1)
        await core.store.sim_states.mark_launching(sim_id, None)
        assert (
            await http.post(f"/api/sims/{sim_id}/logs", json={"seq": 1, "lines": ["real"]})
        ).status_code == 204
        assert (await http.get(f"/api/sims/{sim_id}/log")).text.endswith("\nreal\n")


async def test_the_final_heartbeat_parses_past_a_gap_and_says_lines_are_missing(core) -> None:
    async with core.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        sim_id = run["sims"][0]["id"]
        url = f"/api/sims/{sim_id}"
        assert (await http.post(f"{url}/heartbeat", json={"state": "running"})).status_code == 200
        for seq in (0, 2, 3, 5):  # 1 and 4 never arrive
            assert (
                await http.post(f"{url}/logs", json={"seq": seq, "lines": kernel(seq)})
            ).status_code == 204
        sim = (await http.get(f"/api/runs/{run['id']}")).json()["sims"][0]
        assert sim["kernels_done"] == 1  # the rest waits for chunk 1

        assert (
            await http.post(f"{url}/heartbeat", json={"state": "succeeded", "exit_code": 0})
        ).status_code == 200
        sim = (await http.get(f"/api/runs/{run['id']}")).json()["sims"][0]
        assert sim["kernels_done"] == 4
        assert sim["missing_log_chunks"] == [[1, 1], [4, 4]]
        # The log is exactly what the simulator sent, in order: nothing stands for the missing.
        log = (await http.get(f"{url}/log")).text
        assert log == "".join(line + "\n" for seq in (0, 2, 3, 5) for line in kernel(seq))
        assert "[cascade]" not in "".join(sim["log_tail"])
        # A missing chunk that turns up after all is a repeat: the log stays as it was said.
        assert (await http.post(f"{url}/logs", json={"seq": 1, "lines": ["late"]})).status_code == 204
        assert "late" not in (await http.get(f"{url}/log")).text


async def test_a_gap_that_stays_open_is_closed_after_a_bounded_wait(core, monkeypatch) -> None:
    monkeypatch.setattr(gaps, "GAP_WAIT_S", 0.2)
    async with core.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        sim_id = run["sims"][0]["id"]
        url = f"/api/sims/{sim_id}"
        for seq in (0, 3):  # 1 and 2 never arrive; the sim keeps running
            assert (
                await http.post(f"{url}/logs", json={"seq": seq, "lines": kernel(seq)})
            ).status_code == 204

        assert await wait_until(lambda: kernels_done_is(http, run, 2))
        assert "[cascade]" not in (await http.get(f"{url}/log")).text
        sim = (await http.get(f"/api/runs/{run['id']}")).json()["sims"][0]
        assert sim["missing_log_chunks"] == [[1, 2]]
        # The log goes on from there.
        assert (await http.post(f"{url}/logs", json={"seq": 4, "lines": kernel(4)})).status_code == 204
        assert await kernels_done(http, run) == 3


async def kernels_done(http: httpx.AsyncClient, run: dict) -> int:
    """The kernels done of the run's (first) sim."""
    return (await http.get(f"/api/runs/{run['id']}")).json()["sims"][0]["kernels_done"]


async def kernels_done_is(http: httpx.AsyncClient, run: dict, expected: int) -> bool:
    return await kernels_done(http, run) == expected


async def test_a_gap_left_open_by_a_stopped_server_is_closed_after_its_restart(core, monkeypatch) -> None:
    """The gap timers live in the server's process: a restarted server finds the open gaps in
    the database and gives each its wait again."""
    async with core.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        sim_id = run["sims"][0]["id"]
        url = f"/api/sims/{sim_id}"
        for seq in (0, 2):  # 1 never arrives
            assert (
                await http.post(f"{url}/logs", json={"seq": seq, "lines": kernel(seq)})
            ).status_code == 204
    monkeypatch.setattr(gaps, "GAP_WAIT_S", 0.2)  # the restarted server's wait
    await core.restart()
    async with core.client() as http:
        assert await wait_until(lambda: kernels_done_is(http, run, 2))
        assert "[cascade]" not in (await http.get(f"{url}/log")).text
        assert (await http.get(f"/api/runs/{run['id']}")).json()["sims"][0]["missing_log_chunks"] == [[1, 1]]


async def test_the_worker_sends_its_chunks_before_the_launcher_has_the_sim_started(core, tmp_path) -> None:
    """A chunk can reach the server before the launcher has recorded the sim's start (a Slurm job
    that ran before `sbatch` answered): the server takes it (it used to refuse it with a 409, and
    the worker had to send it again after a running heartbeat)."""
    run = await core.store.runs.create_run(
        ready_trace(), [RunEntry(gpu_config="SM7_QV100", count=1)], core.app[GPU_CONFIGS_KEY]
    )
    sim_id = run.sims[0].id
    plan = WorkerPlan(sim_id=sim_id, argv=["true"], run_dir=tmp_path / "run", scratch=tmp_path)
    async with SimClient(core.url, TOKEN, sim_id) as client:
        worker = Worker(plan, client)
        worker._started_at = utcnow()
        worker.stream.write(["first line of the simulator"])
        worker.stream.finish()
        await worker.stream.sender()  # returns once the spool is empty
    assert worker.stream.unsent() == 0 and worker._stop_reason is None
    async with core.client() as http:
        assert (await http.get(f"/api/sims/{sim_id}/log")).text == "first line of the simulator\n"
        assert (await http.get(f"/api/runs/{run.id}")).json()["sims"][0]["state"] == "pending"


async def test_a_gap_waits_from_when_it_opened_not_from_an_earlier_one(core, monkeypatch) -> None:
    """A gap's timer goes when the gap fills: a later gap gets its own GAP_WAIT_S. Before, the
    first gap's timer stayed, and closed whatever gap was open when it fired, however young:
    a chunk acknowledged a moment later was dropped as a repeat."""
    monkeypatch.setattr(gaps, "GAP_WAIT_S", 3600.0)  # no timer fires during the test
    ingest = core.app[INGEST_KEY]
    async with core.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        sim_id = run["sims"][0]["id"]
        url = f"/api/sims/{sim_id}"

        async def post(seq: int) -> None:
            assert (
                await http.post(f"{url}/logs", json={"seq": seq, "lines": kernel(seq)})
            ).status_code == 204

        await post(0)
        await post(2)
        assert ingest.gap_watched(sim_id) == 1
        await post(1)  # the gap fills: its timer goes
        assert ingest.gap_watched(sim_id) is None
        await post(4)
        assert ingest.gap_watched(sim_id) == 3
        # What the first gap's timer did when it fired: it finds the sim waiting for another
        # chunk, and leaves that gap its own wait.
        await ingest.close_gaps(sim_id, waiting_for=1)
        assert ingest.gap_watched(sim_id) == 3
        await post(3)
        assert ingest.gap_watched(sim_id) is None
        log = (await http.get(f"{url}/log")).text
        assert "never arrived" not in log and "output of kernel 3" in log
        assert (await http.get(f"/api/runs/{run['id']}")).json()["sims"][0]["kernels_done"] == 5


async def test_a_close_that_fails_at_the_final_heartbeat_is_tried_again(core, monkeypatch) -> None:
    # The final heartbeat closes the gaps, and nothing after it would: a close that fails there
    # (parse workers that die, a full disk) gets another try GAP_WAIT_S later.
    monkeypatch.setattr(gaps, "GAP_WAIT_S", 0.2)
    ingest = core.app[INGEST_KEY]
    real_parse = ingest.parser.parse
    armed: list[int] = []
    failures: list[int] = []

    async def fails_once(tx, jobs):  # the first parse once armed: the final heartbeat's close
        if armed and not failures:
            failures.append(1)
            raise RuntimeError("the parse failed")
        return await real_parse(tx, jobs)

    monkeypatch.setattr(ingest.parser, "parse", fails_once)
    async with core.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        sim_id = run["sims"][0]["id"]
        url = f"/api/sims/{sim_id}"
        assert (await http.post(f"{url}/heartbeat", json={"state": "running"})).status_code == 200
        for seq in (0, 2):  # 1 never arrives
            assert (
                await http.post(f"{url}/logs", json={"seq": seq, "lines": kernel(seq)})
            ).status_code == 204
        armed.append(1)
        assert (
            await http.post(f"{url}/heartbeat", json={"state": "succeeded", "exit_code": 0})
        ).status_code == 200
        assert failures and ingest.gap_watched(sim_id) == 1

        async def log_closed() -> bool:
            sim = (await http.get(f"/api/runs/{run['id']}")).json()["sims"][0]
            return sim.get("missing_log_chunks") == [[1, 1]]

        assert await wait_until(log_closed)
        assert (await http.get(f"/api/runs/{run['id']}")).json()["sims"][0]["kernels_done"] == 2


async def test_a_damaged_stored_chunk_is_a_line_saying_so_in_the_download(core) -> None:
    # One damaged page must not cost the whole log: the download goes on past it.
    async with core.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        sim_id = run["sims"][0]["id"]
        url = f"/api/sims/{sim_id}"
        for seq in range(3):
            assert (
                await http.post(f"{url}/logs", json={"seq": seq, "lines": kernel(seq)})
            ).status_code == 204
        async with core.store.db.write() as tx:
            async with tx.conn.execute(
                "SELECT data FROM log_chunks WHERE sim_id=? AND seq=1", (sim_id,)
            ) as cur:
                (blob,) = await cur.fetchone()
            damaged = bytearray(blob)
            damaged[len(damaged) // 2] ^= 0xFF
            await tx.conn.execute(
                "UPDATE log_chunks SET data=? WHERE sim_id=? AND seq=1", (bytes(damaged), sim_id)
            )
        response = await http.get(f"{url}/log")
        assert response.status_code == 200
        assert response.text == "".join(
            line + "\n"
            for line in [
                *kernel(0),
                "[cascade] log chunk 1 is damaged in storage: lines are missing here",
                *kernel(2),
            ]
        )
