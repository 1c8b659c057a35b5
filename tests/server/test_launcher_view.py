"""What a scheduler launcher records on a sim: its job id while it waits `pending`, Slurm's
state, and a heartbeat from a queued sim whose job started before the launcher noticed."""

from __future__ import annotations

from cascade_core.models import RunEntry
from cascade_server.appkeys import GPU_CONFIGS_KEY
from tests.conftest import ready_trace


async def _one_sim(server, client) -> dict:
    """A run's sim as the store creates it (`pending`), with no launcher acting on it."""
    trace = ready_trace()
    await server.store.traces.put_trace(trace)
    run = await server.store.runs.create_run(
        trace, [RunEntry(gpu_config="SM7_QV100", count=1)], server.app[GPU_CONFIGS_KEY], replay=True
    )
    return run.sims[0].model_dump(mode="json")


async def test_a_queued_sim_keeps_pending_with_its_job_id_and_slurms_word(make_server):
    server = await make_server(launcher="manual")
    async with server.client() as client:
        sim = await _one_sim(server, client)
        store = server.store
        await store.sim_states.set_launcher_refs({sim["id"]: "41_0"})
        await store.sim_states.set_launcher_view(sim["id"], launcher_state="PENDING (Resources)")
        shown = (await client.get(f"/api/runs/{sim['run_id']}")).json()["sims"][0]
        assert (shown["state"], shown["launcher_ref"], shown["launcher_state"]) == (
            "pending",
            "41_0",
            "PENDING (Resources)",
        )
        # The job started and finished before the launcher's next squeue: the final heartbeat counts.
        ack = await client.post(
            f"/api/sims/{sim['id']}/heartbeat", json={"state": "succeeded", "exit_code": 0}
        )
        assert ack.json() == {"state": "succeeded", "cancel": False}
        shown = (await client.get(f"/api/runs/{sim['run_id']}")).json()["sims"][0]
        assert (shown["state"], shown["launcher_state"]) == ("succeeded", None)
        await store.sim_states.set_launcher_view(sim["id"], launcher_state="RUNNING")  # too late: ignored
        assert (await client.get(f"/api/runs/{sim['run_id']}")).json()["sims"][0]["launcher_state"] is None


async def test_a_pending_sim_without_a_job_ignores_heartbeats(make_server):
    server = await make_server(launcher="manual")
    async with server.client() as client:
        sim = await _one_sim(server, client)
        ack = await client.post(f"/api/sims/{sim['id']}/heartbeat", json={"state": "running"})
        assert ack.json() == {"state": "pending", "cancel": False}


async def test_a_failed_sim_gains_the_cause_slurm_gives(make_server):
    server = await make_server(launcher="manual")
    async with server.client() as client:
        sim = await _one_sim(server, client)
        await server.store.sim_states.mark_launching(sim["id"], None)
        await client.post(
            f"/api/sims/{sim['id']}/heartbeat",
            json={"state": "failed", "exit_code": 143, "error": "worker stopped by SIGTERM"},
        )
        await server.store.sim_states.add_failure_cause(sim["id"], "Slurm job 41_0 TIMEOUT")
        await server.store.sim_states.add_failure_cause(sim["id"], "Slurm job 41_0 TIMEOUT")  # once only
        shown = (await client.get(f"/api/runs/{sim['run_id']}")).json()["sims"][0]
        assert shown["error"] == "worker stopped by SIGTERM (Slurm job 41_0 TIMEOUT)"
