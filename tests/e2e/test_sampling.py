"""Issue 33 end to end, with the fake `accel-sim.out` (it runs the kernel list it is given, each
kernel's cycles 1000 + its file's number): a sampled sim simulates only its representatives,
each after its warm-up kernel, and every kernel of the trace gets a row, the estimated ones
naming their representative. (The real simulator: test_real_accelsim_sampling.py.)"""

from __future__ import annotations

from cascade_core.models import KernelLaunch
from tests.conftest import ready_trace
from tests.helpers import finished_run
from tests.worker.fakes import install_fake_accelsim

# (name, warp instructions) per kernel, in list order
KERNELS = [("_Z1av", 100), ("_Z1bv", 50), ("_Z1av", 100), ("_Z1bv", 50), ("_Z1av", 100), ("_Z1cv", 70)]


async def sampled_server(make_server, tmp_path, configs):
    fake = install_fake_accelsim(tmp_path / "accel-sim", configs)
    server = await make_server(launcher="local", local_slots=4, accelsim_dir=fake)
    kernels = [
        KernelLaunch(kernel_id=n, name=name, grid=(1, 1, 1), block=(32, 1, 1), instructions=insts)
        for n, (name, insts) in enumerate(KERNELS, start=1)
    ]
    trace = ready_trace("repeats", kernels=len(KERNELS)).model_copy(update={"kernels": kernels})
    await server.store.traces.put_trace(trace)
    traces = server.settings.traces_dir / trace.id / "traces"
    traces.mkdir(parents=True)
    for n in range(1, len(KERNELS) + 1):
        (traces / f"kernel-{n}.traceg").write_text(f"-kernel name = {KERNELS[n - 1][0]}\n")
    (traces / "kernelslist.g").write_text("".join(f"kernel-{n}.traceg\n" for n in range(1, len(KERNELS) + 1)))
    return server, trace.id


async def test_identical_kernels_are_simulated_once_and_every_kernel_gets_a_row(
    make_server, worker_env, tmp_path
):
    server, trace_id = await sampled_server(make_server, tmp_path, {"SM7_OK": {"fake_fail_on": "none"}})
    async with server.client() as http:
        resp = await http.post(
            "/api/runs",
            json={
                "trace_id": trace_id,
                "entries": [{"gpu_config": "SM7_OK", "count": 1, "sampling": "identical"}],
            },
        )
        assert resp.status_code == 201, resp.text
        run = resp.json()
        assert run["entries"][0]["sampling"] == "identical"
        sim = (await finished_run(http, run["id"]))["sims"][0]
        assert sim["state"] == "succeeded", sim
        assert (sim["kernels_done"], sim["kernels_total"]) == (3, 3)
        assert sim["sampling"] == {
            "method": "identical",
            "kernels": 6,
            "kernels_simulated": 3,
            "instructions": 470,
            "instructions_simulated": 220,
            "error_pct": 0.0,
        }
        results = (await http.get(f"/api/sims/{sim['id']}/results")).json()
        kernels = results["kernels"]
        rows = [(k["kernel_index"], k["gpu_sim_cycle"], k.get("estimated_from")) for k in kernels]
        # the results' totals count every kernel, the estimated ones too (the simulator's own
        # count only the three it simulated)
        assert results["totals"]["gpu_tot_sim_cycle"] == sum(k["gpu_sim_cycle"] for k in kernels) == 6013
        assert sim["latest"]["gpu_tot_sim_cycle"] == 1001 + 1002 + 1006
        assert rows == [
            (0, 1001, None),
            (1, 1002, None),
            (2, 1001, 0),
            (3, 1002, 1),
            (4, 1001, 0),
            (5, 1006, None),
        ]
        log = (await http.get(f"/api/sims/{sim['id']}/log")).text
        assert "[cascade] simulator 1: kernels #0-1, #5 of the trace, after 1 warm-up kernel (#4)" in log
        comparison = (await http.get(f"/api/runs/{run['id']}/comparison")).json()
        assert [r["sim_ns"]["SM7_OK"] is not None for r in comparison["rows"]] == [True] * 6


async def test_sampling_is_refused_on_the_stand_in_and_for_an_unknown_method(make_server, tmp_path):
    server = await make_server(launcher="local", local_slots=1)
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        entry = {"gpu_config": "SM7_QV100", "count": 1}
        stand_in = await http.post(
            "/api/runs",
            json={"trace_id": "tinyformer-step-sm70", "entries": [{**entry, "sampling": "identical"}]},
        )
        assert stand_in.status_code == 422
        assert stand_in.json()["detail"].startswith("sampling (identical) needs the real simulator")
        unknown = await http.post(
            "/api/runs",
            json={"trace_id": "tinyformer-step-sm70", "entries": [{**entry, "sampling": "every-other"}]},
        )
        assert unknown.status_code == 422 and isinstance(unknown.json()["detail"], list)
        assert unknown.json()["detail"][0]["loc"][-1] == "sampling"


async def test_a_sampled_run_in_shards_samples_each_shards_range(make_server, worker_env, tmp_path):
    server, trace_id = await sampled_server(make_server, tmp_path, {"SM7_OK": {"fake_fail_on": "none"}})
    async with server.client() as http:
        resp = await http.post(
            "/api/runs",
            json={
                "trace_id": trace_id,
                "entries": [{"gpu_config": "SM7_OK", "count": 1, "sampling": "identical", "shards": 2}],
            },
        )
        assert resp.status_code == 201, resp.text
        final = await finished_run(http, resp.json()["id"])
        assert final["state"] == "succeeded" and len(final["sims"]) == 2
        kernels = (await http.get(f"/api/runs/{final['id']}/kernels")).json()
        assert [k["kernel_index"] for k in kernels] == list(range(6))  # each kernel once
        for k in kernels:  # its own cycles, or its representative's, from the same shard
            source = k["kernel_index"] if k.get("estimated_from") is None else k["estimated_from"]
            assert k["gpu_sim_cycle"] == 1001 + source, k
            shard = next(s["shard"] for s in final["sims"] if s["id"] == k["sim_id"])
            assert shard["kernel_first"] <= source <= shard["kernel_last"]
        assert sum(s["kernels_total"] for s in final["sims"]) < 6  # fewer simulated than the trace has
        assert any(k.get("estimated_from") is not None for k in kernels)


async def test_a_failed_representative_fails_the_kernels_it_stands_for(make_server, worker_env, tmp_path):
    server, trace_id = await sampled_server(
        make_server, tmp_path, {"SM7_FAILS": {"fake_fail_on": "kernel-1.traceg"}}
    )
    async with server.client() as http:
        resp = await http.post(
            "/api/runs",
            json={
                "trace_id": trace_id,
                "entries": [{"gpu_config": "SM7_FAILS", "count": 1, "sampling": "identical"}],
            },
        )
        sim = (await finished_run(http, resp.json()["id"]))["sims"][0]
        assert sim["state"] == "succeeded" and sim["kernels_failed"] == 1
        kernels = {
            k["kernel_index"]: k for k in (await http.get(f"/api/sims/{sim['id']}/results")).json()["kernels"]
        }
        assert kernels[0]["failed"].startswith("shader.cc:3812")
        assert kernels[2]["failed"].startswith(
            "estimated from kernel #0, which failed in the simulator: shader.cc"
        )
        assert kernels[2]["estimated_from"] == 0 and kernels[1]["gpu_sim_cycle"] == 1002
