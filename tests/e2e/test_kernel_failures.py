"""Issue 30 end to end, with a fake `accel-sim.out` that runs the kernel list it is given and
aborts, as the real one does, on the kernels a test names: a real server, real workers, the
worker's own kernel lists and restarts, the log notes parsed back. (The real simulator on real
PyTorch kernels: test_real_accelsim_kernel_failures.py.)"""

from __future__ import annotations

import asyncio

from tests.conftest import ready_trace
from tests.helpers import finished_run, get_run, wait_until
from tests.worker.fakes import install_fake_accelsim

REASON = "shader.cc:3812: void barrier_set_t::deallocate_barrier(unsigned int): Assertion `active.any() == false' failed."
KERNELS = 6


async def fake_server(make_server, tmp_path, configs: dict[str, dict[str, str]], kernels: int = KERNELS):
    fake = install_fake_accelsim(tmp_path / "accel-sim", configs)
    server = await make_server(launcher="local", local_slots=4, accelsim_dir=fake)
    trace = ready_trace("torchlike", kernels=kernels)
    await server.store.traces.put_trace(trace)
    traces = server.settings.traces_dir / trace.id / "traces"
    traces.mkdir(parents=True)
    lines = []
    for n in range(1, kernels + 1):  # a memcpy before each kernel, and one after the last
        lines += [f"MemcpyHtoD,0x{n:08x},256", f"kernel-{n}.traceg"]
        (traces / f"kernel-{n}.traceg").write_text(f"-kernel name = _Z6kernel{n}v\n-kernel id = {n}\n")
    (traces / "kernelslist.g").write_text("\n".join([*lines, "MemcpyHtoD,0xffff,16", ""]))
    return server, trace.id


async def start(http, trace_id: str, entries: list[dict]) -> dict:
    resp = await http.post("/api/runs", json={"trace_id": trace_id, "entries": entries})
    assert resp.status_code == 201, resp.text
    return resp.json()


async def test_a_sim_goes_on_past_the_kernels_the_simulator_fails_on(make_server, worker_env, tmp_path):
    configs = {
        "SM7_FAILS": {"fake_fail_on": "kernel-3.traceg,kernel-5.traceg"},
        "SM7_STOPS": {"fake_fail_on": "kernel-3.traceg,kernel-5.traceg"},
        "SM7_OK": {"fake_fail_on": "none"},
    }
    server, trace_id = await fake_server(make_server, tmp_path, configs)
    async with server.client() as http:
        run = await start(
            http,
            trace_id,
            [
                {"gpu_config": "SM7_FAILS", "count": 1},
                {"gpu_config": "SM7_STOPS", "count": 1, "on_kernel_failure": "stop"},
                {"gpu_config": "SM7_OK", "count": 1},
            ],
        )
        assert (
            run["entries"][1]["on_kernel_failure"] == "stop" and "on_kernel_failure" not in run["entries"][0]
        )
        final = await finished_run(http, run["id"])
        sims = {s["gpu_config"]: s for s in final["sims"]}
        went_on = sims["SM7_FAILS"]
        assert went_on["state"] == "succeeded" and went_on["exit_code"] == 0
        assert (went_on["kernels_done"], went_on["kernels_failed"], went_on["kernels_total"]) == (6, 2, 6)
        assert went_on["error"] == (
            "2 of 6 kernels failed in the simulator: #2 (assertion failed: active.any() == false), "
            "#4 (assertion failed: active.any() == false)"
        )
        stopped = sims["SM7_STOPS"]  # today's behaviour
        assert stopped["state"] == "failed" and stopped["error"] == "assertion failed: active.any() == false"
        assert stopped["kernels_done"] == 2 and "kernels_failed" not in stopped
        assert sims["SM7_OK"]["state"] == "succeeded" and sims["SM7_OK"]["error"] is None
        assert final["state"] == "partial"

        results = (await http.get(f"/api/sims/{went_on['id']}/results")).json()
        rows = [(k["kernel_index"], k["gpu_sim_cycle"], k.get("failed")) for k in results["kernels"]]
        assert rows == [
            (0, 1001, None),
            (1, 1002, None),
            (2, None, REASON),
            (3, 1004, None),
            (4, None, REASON),
            (5, 1006, None),
        ]
        # each kernel's launch number in the trace, after a restart too
        assert [k["kernel_launch_uid"] for k in results["kernels"] if "failed" not in k] == [1, 2, 4, 6]
        failed = [k for k in results["kernels"] if "failed" in k]
        assert [k["kernel_name"] for k in failed] == ["_Z6reducev", "_Z6reducev"]
        log = (await http.get(f"/api/sims/{went_on['id']}/log")).text
        notes = [line for line in log.splitlines() if line.startswith("[cascade]")]
        assert notes == [
            f"[cascade] kernel #2 failed in the simulator: {REASON}; kernel name: _Z6reducev",
            "[cascade] restart 1: kernels #3-5 of the trace, after 1 warm-up kernel (#1)",
            f"[cascade] kernel #4 failed in the simulator: {REASON}; kernel name: _Z6reducev",
            "[cascade] restart 2: kernel #5 of the trace, after 1 warm-up kernel (#3)",
        ]
        assert log.count("GPGPU-Sim: Configuration options:") == 3  # each simulator's log, in order
        comparison = (await http.get(f"/api/runs/{run['id']}/comparison")).json()
        assert (
            comparison["rows"][2]["failed"] == ["SM7_FAILS"]
            and comparison["rows"][2]["sim_ns"]["SM7_FAILS"] is None
        )
        assert "failed" not in comparison["rows"][0]
        perfetto = (await http.get(f"/api/runs/{run['id']}/perfetto")).json()
        assert len([e for e in perfetto["traceEvents"] if e.get("cat") == "failed"]) == 2


async def test_a_config_on_which_every_kernel_fails_stops_quickly_with_its_reason(
    make_server, worker_env, tmp_path
):
    server, trace_id = await fake_server(
        make_server, tmp_path, {"SM7_BROKEN": {"fake_fail_on": "all"}}, kernels=40
    )
    async with server.client() as http:
        run = await start(http, trace_id, [{"gpu_config": "SM7_BROKEN", "count": 1}])
        sim = (await finished_run(http, run["id"], timeout=60))["sims"][0]
        assert sim["state"] == "failed"
        assert sim["error"].startswith(
            "stopped: the simulator failed on the first kernel it ran 3 times in a row"
        )
        assert "; 3 of 40 kernels failed in the simulator: #0 (assertion failed: " in sim["error"]
        assert (sim["kernels_done"], sim["kernels_failed"]) == (3, 3)  # never the same kernel twice


async def test_a_hanging_kernel_is_stopped_by_the_kernel_wall_limit_and_the_sim_goes_on(
    make_server, worker_env, tmp_path, monkeypatch
):
    monkeypatch.setenv("CASCADE_KERNEL_WALL_LIMIT_S", "2")
    server, trace_id = await fake_server(
        make_server, tmp_path, {"SM7_HANGS": {"fake_fail_on": "hang:kernel-2.traceg"}}, kernels=3
    )
    async with server.client() as http:
        run = await start(http, trace_id, [{"gpu_config": "SM7_HANGS", "count": 1}])
        sim = (await finished_run(http, run["id"], timeout=60))["sims"][0]
        assert sim["state"] == "succeeded" and sim["kernels_failed"] == 1
        kernels = (await http.get(f"/api/sims/{sim['id']}/results")).json()["kernels"]
        assert kernels[1]["failed"].startswith("no kernel finished for 2 s (the kernel wall limit")
        assert [k["gpu_sim_cycle"] for k in kernels] == [1001, None, 1003]


async def test_cancel_while_a_restarted_simulator_runs_ends_the_sim_as_any_cancel(
    make_server, worker_env, tmp_path
):
    server, trace_id = await fake_server(
        make_server,
        tmp_path,
        {"SM7_SLOW": {"fake_fail_on": "kernel-1.traceg", "fake_kernel_s": "1"}},
        kernels=30,
    )
    async with server.client() as http:
        run = await start(http, trace_id, [{"gpu_config": "SM7_SLOW", "count": 1}])

        async def restarted():
            sim = (await get_run(http, run["id"]))["sims"][0]
            return sim if sim["kernels_done"] >= 3 else None

        sim = await wait_until(restarted, 60)
        assert sim["kernels_failed"] == 1
        assert (await http.post(f"/api/runs/{run['id']}/cancel")).status_code == 200
        final = await finished_run(http, run["id"], timeout=60)
        assert final["sims"][0]["state"] == "cancelled"
        done = final["sims"][0]["kernels_done"]
        await asyncio.sleep(2)  # a cancelled sim's worker sends nothing more
        again = (await get_run(http, run["id"]))["sims"][0]
        assert again["state"] == "cancelled" and again["kernels_done"] == done < 30
        kernels = (await http.get(f"/api/sims/{sim['id']}/results")).json()["kernels"]
        indexes = [k["kernel_index"] for k in kernels]
        assert indexes == sorted(set(indexes))  # nothing counted twice


async def test_a_simulator_stuck_outside_any_kernel_ends_the_sim_with_the_wall_limit(
    make_server, worker_env, tmp_path, monkeypatch
):
    """A memcpy the simulator spins on (no kernel launched) is stopped by the wall limit too: no
    kernel to blame, so the sim ends, failed, saying so."""
    monkeypatch.setenv("CASCADE_KERNEL_WALL_LIMIT_S", "2")
    server, trace_id = await fake_server(
        make_server, tmp_path, {"SM7_SPINS": {"fake_fail_on": "spin:kernel-2.traceg"}}, kernels=3
    )
    async with server.client() as http:
        run = await start(http, trace_id, [{"gpu_config": "SM7_SPINS", "count": 1}])
        sim = (await finished_run(http, run["id"], timeout=60))["sims"][0]
        assert sim["state"] == "failed"
        assert sim["error"].startswith("no kernel launched for 2 s (the kernel wall limit")
        assert sim["kernels_done"] == 1
