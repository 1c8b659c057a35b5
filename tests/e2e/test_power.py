"""Issue 34 end to end, with a fake `accel-sim.out` that writes AccelWattch's power report as the
real one does (one block per kernel, in its working directory, anew for each simulator): a real
server, real workers, the worker's notes parsed back. Power arrives kernel by kernel, the
warm-up kernels' is dropped, a kernel the simulator failed on has none, a cut or garbled report
loses no kernel's cycles and the log says whose power is missing. (The real simulator:
test_real_accelsim_power.py.)"""

from __future__ import annotations

import asyncio
import json

import pytest
from httpx_sse import aconnect_sse

from tests.e2e.test_kernel_failures import fake_server, start
from tests.helpers import finished_run
from tests.worker.fakes.accel_sim_fake import POWER_COMPONENTS, kernel_power

pytestmark = pytest.mark.timeout(120)

CONFIGS = {
    "SM7_POWER": {"fake_fail_on": "kernel-3.traceg", "fake_power": "ok"},
    "SM7_CUT": {"fake_fail_on": "none", "fake_power": "cut:kernel-4.traceg"},
    "SM7_GARBLED": {"fake_fail_on": "none", "fake_power": "garble:kernel-2.traceg"},
    "SM7_NOMODEL": {"fake_fail_on": "none"},
}


async def kernel_power_events(http, run_id: str, into: list[dict]) -> None:
    async with aconnect_sse(http, "GET", f"/api/runs/{run_id}/events", timeout=None) as source:
        async for event in source.aiter_sse():
            data = json.loads(event.data)
            if data["type"] == "kernel_power":
                into.append(data)


async def run_of(http, trace_id: str, entries: list[dict]) -> tuple[dict, dict[str, list[dict]], dict]:
    run = await start(http, trace_id, entries)
    events: list[dict] = []
    watcher = asyncio.create_task(kernel_power_events(http, run["id"], events))
    final = await finished_run(http, run["id"], timeout=90)
    await asyncio.sleep(0)  # the stream is past the run's last events (they came before its end)
    watcher.cancel()
    kernels = (await http.get(f"/api/runs/{run['id']}/results")).json()
    by_sim: dict[str, list[dict]] = {}
    for sim in kernels["sims"]:
        by_sim.setdefault(sim["gpu_config"]["name"], []).extend(sim["kernels"])  # shards in order
    return final, by_sim, {"events": events}


async def test_each_kernel_gets_its_power_and_energy_and_the_cycles_do_not_change(
    make_server, worker_env, tmp_path
):
    server, trace_id = await fake_server(make_server, tmp_path, CONFIGS)
    async with server.client() as http:
        configs = {c["name"]: c for c in (await http.get("/api/gpu-configs")).json()}
        assert configs["SM7_POWER"]["power_model"] is True and configs["SM7_NOMODEL"]["power_model"] is False

        refused = await http.post(
            "/api/runs",
            json={
                "trace_id": trace_id,
                "entries": [{"gpu_config": "SM7_NOMODEL", "count": 1, "power": True}],
            },
        )
        assert refused.status_code == 422
        assert refused.json()["detail"] == (
            "gpu_config 'SM7_NOMODEL' has no AccelWattch power model (accelwattch_sass_sim.xml beside "
            "its gpgpusim.config), so it cannot simulate power; configs of its arch with one: SM7_CUT, "
            "SM7_GARBLED, SM7_POWER"
        )

        final, kernels, seen = await run_of(
            http, trace_id, [{"gpu_config": "SM7_POWER", "count": 1, "power": True}]
        )
        plain, plain_kernels, _ = await run_of(http, trace_id, [{"gpu_config": "SM7_POWER", "count": 1}])
        sim = final["sims"][0]
        assert sim["state"] == "succeeded" and sim["power"] is True and "power" not in plain["sims"][0]
        log = (await http.get(f"/api/sims/{sim['id']}/log")).text
        files = {f["name"] for f in (await http.get(f"/api/sims/{sim['id']}/files")).json()}
        report = (await http.get(f"/api/sims/{sim['id']}/files/accelwattch_power_report.log")).text
        perfetto = (await http.get(f"/api/runs/{final['id']}/perfetto")).json()["traceEvents"]

    rows = kernels["SM7_POWER"]
    # the cycles are a run's without power; kernel #2 failed in the simulator and has no power
    assert [k["gpu_sim_cycle"] for k in rows] == [k["gpu_sim_cycle"] for k in plain_kernels["SM7_POWER"]]
    assert [k["kernel_index"] for k in rows] == [0, 1, 2, 3, 4, 5]
    for k in rows:
        number = k["kernel_index"] + 1  # kernel-<number>.traceg
        if k["kernel_index"] == 2:
            assert "power" not in k and k["failed"]
            continue
        power = k["power"]
        assert (power["avg_w"], power["max_w"], power["min_w"]) == (
            kernel_power(number),
            kernel_power(number) + 10,
            kernel_power(number) - 5,
        )
        assert power["components"] == {"RFP": float(number), **POWER_COMPONENTS}  # not TOT_INST
        assert k["energy_j"] == pytest.approx(power["avg_w"] * k["sim_time_ns"] * 1e-9)
    assert all("power" not in k and "energy_j" not in k for k in plain_kernels["SM7_POWER"])
    # kernel #1 ran twice (the restart's warm-up kernel): its power is noted once, the first
    # simulator's; the upload is both simulators' reports, one after the other
    assert log.count("[cascade] power #1: ") == 1
    assert "accelwattch_power_report.log" in files
    assert report.count("kernel_launch_uid = ") == 6  # #0-1, then #1 (warm-up) and #3-5
    assert "no power for" not in log
    # Perfetto: a power counter track beside the kernels (0 for the failed kernel's place, and after)
    counts = [e for e in perfetto if e["ph"] == "C"]
    assert {e["name"] for e in counts} == {"power W, replica 0"}
    assert [e["args"]["W"] for e in counts] == [kernel_power(n) for n in (1, 2, 4, 5, 6)] + [0.0]
    slices = [e for e in perfetto if e["ph"] == "X" and e.get("cat") == "kernel"]
    assert all(e["args"]["energy_j"] > 0 for e in slices)
    # live: each kernel's power came in an event of its own (after the kernel's)
    live = sorted(k["kernel_index"] for e in seen["events"] for k in e["kernels"])
    assert live == [0, 1, 3, 4, 5]


async def test_a_cut_or_garbled_report_loses_no_cycles_and_says_whose_power_is_missing(
    make_server, worker_env, tmp_path
):
    server, trace_id = await fake_server(make_server, tmp_path, CONFIGS)
    async with server.client() as http:
        final, kernels, _ = await run_of(
            http,
            trace_id,
            [
                {"gpu_config": "SM7_CUT", "count": 1, "power": True},
                {"gpu_config": "SM7_GARBLED", "count": 1, "power": True},
            ],
        )
        logs = {s["gpu_config"]: (await http.get(f"/api/sims/{s['id']}/log")).text for s in final["sims"]}
    assert [s["state"] for s in final["sims"]] == ["succeeded", "succeeded"]
    for config, missing in (("SM7_CUT", {3}), ("SM7_GARBLED", {1})):
        rows = kernels[config]
        assert [k["gpu_sim_cycle"] for k in rows] == [1001, 1002, 1003, 1004, 1005, 1006]
        assert {k["kernel_index"] for k in rows if "power" not in k} == missing
    # a block cut off (the next one began before it ended) is no block: the later ones still count
    assert "[cascade] no power for kernel #3: the power report has no whole block for it" in logs["SM7_CUT"]
    assert (
        "[cascade] no power for kernel #1: the power report has no whole block for it (1 garbled)"
        in logs["SM7_GARBLED"]
    )


async def test_shards_drop_their_warm_up_kernels_power_and_a_retry_keeps_power(
    make_server, worker_env, tmp_path
):
    """Two shards of six kernels, each after one warm-up kernel: every kernel's power once, from
    the shard that owns it (the second shard's warm-up kernel #2 is the first shard's)."""
    server, trace_id = await fake_server(
        make_server, tmp_path, {"SM7_POWER": {"fake_fail_on": "none", "fake_power": "ok"}}
    )
    async with server.client() as http:
        final, kernels, _ = await run_of(
            http, trace_id, [{"gpu_config": "SM7_POWER", "count": 1, "shards": 2, "power": True}]
        )
        logs = [(await http.get(f"/api/sims/{s['id']}/log")).text for s in final["sims"]]
    assert [s["state"] for s in final["sims"]] == ["succeeded", "succeeded"]
    rows = [k for k in kernels["SM7_POWER"] if not k.get("warmup")]
    assert [(k["kernel_index"], k["power"]["avg_w"]) for k in rows] == [
        (n - 1, kernel_power(n)) for n in range(1, 7)
    ]
    # the second shard simulated #2 to warm up: its log has no power note for it
    assert "[cascade] power #2: " in logs[0] and "[cascade] power #2: " not in logs[1]


async def test_an_estimated_kernel_takes_its_representative_s_power(make_server, worker_env, tmp_path):
    from tests.e2e.test_sampling import sampled_server

    server, trace_id = await sampled_server(
        make_server, tmp_path, {"SM7_POWER": {"fake_fail_on": "none", "fake_power": "ok"}}
    )
    async with server.client() as http:
        _, kernels, seen = await run_of(
            http,
            trace_id,
            [{"gpu_config": "SM7_POWER", "count": 1, "sampling": "identical", "power": True}],
        )
    rows = kernels["SM7_POWER"]
    # kernels 0, 2, 4 are one group (#0 simulated), 1 and 3 another (#1), 5 its own
    assert [(k["kernel_index"], k.get("estimated_from")) for k in rows] == [
        (0, None),
        (1, None),
        (2, 0),
        (3, 1),
        (4, 0),
        (5, None),
    ]
    for k in rows:
        representative = k.get("estimated_from", k["kernel_index"])
        assert k["power"]["avg_w"] == kernel_power(representative + 1)
        assert k["energy_j"] == pytest.approx(k["power"]["avg_w"] * k["sim_time_ns"] * 1e-9)
    assert sorted(k["kernel_index"] for e in seen["events"] for k in e["kernels"]) == [0, 1, 2, 3, 4, 5]


async def test_a_retried_sim_simulates_power_again(make_server, worker_env, tmp_path):
    server, trace_id = await fake_server(
        make_server, tmp_path, {"SM7_BROKEN": {"fake_fail_on": "all", "fake_power": "ok"}}
    )
    async with server.client() as http:
        final, _, _ = await run_of(http, trace_id, [{"gpu_config": "SM7_BROKEN", "count": 1, "power": True}])
        assert final["sims"][0]["state"] == "failed"
        retried = await http.post(f"/api/runs/{final['id']}/retry")
        assert retried.status_code == 201, retried.text
        again = retried.json()
        assert again["entries"][0]["power"] is True and again["sims"][0]["power"] is True
        await finished_run(http, again["id"], timeout=90)


async def test_cascade_run_start_power_runs_power_where_there_is_a_model(make_server, worker_env, tmp_path):
    """As New run's `w`: a picked config without a model runs without power, and the command
    says so once the run is made; with no picked config that has one, the command refuses."""
    from tests.e2e.test_cli_commands import cascade

    server, trace_id = await fake_server(make_server, tmp_path, CONFIGS)
    args = ("run", "start", "--trace", trace_id, "--power")
    both = await cascade(*args, "--config", "SM7_POWER", "SM7_NOMODEL", url=server.url, home=tmp_path)
    assert both.code == 0, both.err
    assert both.err.splitlines()[-1] == (
        "power: AccelWattch on, about 2-3x the simulation time; without power (no model): SM7_NOMODEL"
    )
    async with server.client() as http:
        run = (await http.get(f"/api/runs/{both.out.split()[0]}")).json()
        await finished_run(http, run["id"], timeout=90)
    assert [(e["gpu_config"], e.get("power", False)) for e in run["entries"]] == [
        ("SM7_POWER", True),
        ("SM7_NOMODEL", False),
    ]
    none = await cascade(*args, "--config", "SM7_NOMODEL", url=server.url, home=tmp_path)
    assert (none.code, none.out) == (3, "")
    assert none.err == (
        "cascade run start: --power: SM7_NOMODEL has no AccelWattch power model, so the run would have no "
        "power; configs of its arch with one: SM7_CUT, SM7_GARBLED, SM7_POWER (`cascade configs` lists them)\n"
    )
