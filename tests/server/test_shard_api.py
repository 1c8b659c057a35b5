"""Issue 23 through the API: sharded runs with the manual launcher, their logs posted as a
simulator would (the recorded real log's blocks for each shard), merged into one result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cascade_core.models import KernelStat
from cascade_worker.replay import read_lines
from cascade_worker.replay_shard import select_kernels
from tests.conftest import ready_trace
from tests.helpers import RECORDINGS
from tests.server.test_shard_plan import DEMO

SAMPLES_REAL = Path("/work/shared/samples-real/accelsim-traces/tinyformer-step-sm70/traces")
RECORDED = read_lines(RECORDINGS / "SM7_QV100.log.gz")
CYCLES = [int(line.split("=")[1]) for line in RECORDED if line.startswith("gpu_sim_cycle = ")]


@pytest.fixture
async def sharding(make_server, accelsim_dir):
    server = await make_server(accelsim_dir=accelsim_dir)
    trace = ready_trace()
    for kernel, insts in zip(trace.kernels, DEMO):
        kernel.instructions = insts
    await server.store.traces.put_trace(trace)
    await server.store.traces.put_trace(ready_trace("one-kernel", kernels=1))
    traces = server.settings.traces_dir / trace.id / "traces"
    traces.mkdir(parents=True)
    (traces / "kernelslist.g").write_text(
        "MemcpyHtoD,0x1,256\n" + "".join(f"kernel-{n}.traceg\n" for n in range(1, 16))
    )
    return server


async def create(http, entries, trace_id="tinyformer-step-sm70", status=201):
    resp = await http.post("/api/runs", json={"trace_id": trace_id, "entries": entries})
    assert resp.status_code == status, resp.text
    return resp.json()


async def simulate(http, sim, fail=False):
    """Post the recorded log's blocks of the kernels this sim simulates, then its end."""
    shard = sim.get("shard")
    lines = (
        RECORDED
        if shard is None
        else select_kernels(RECORDED, shard["kernel_first"] - shard["warmup_kernels"], shard["kernel_last"])
    )
    for seq, start in enumerate(range(0, len(lines), 5000)):
        resp = await http.post(
            f"/api/sims/{sim['id']}/logs", json={"seq": seq, "lines": lines[start : start + 5000]}
        )
        assert resp.status_code == 204, resp.text
    beat = (
        {"state": "failed", "exit_code": 1, "error": "boom"}
        if fail
        else {"state": "succeeded", "exit_code": 0}
    )
    assert (await http.post(f"/api/sims/{sim['id']}/heartbeat", json=beat)).status_code == 200


@pytest.mark.parametrize(
    "entry, loc",
    [
        ({"shards": 0}, "shards"),
        ({"shards": 65}, "shards"),
        ({"shards": 2.0}, "shards"),
        ({"shards": "2"}, "shards"),
        ({"shards": 2, "warmup_kernels": -1}, "warmup_kernels"),
        ({"shards": 2, "warmup_kernels": 1.5}, "warmup_kernels"),
    ],
)
async def test_bad_shard_fields_are_a_422_list(sharding, entry, loc):
    async with sharding.client() as http:
        body = await create(http, [{"gpu_config": "SM7_QV100", "count": 1, **entry}], status=422)
    assert isinstance(body["detail"], list) and body["detail"][0]["loc"][-1] == loc


async def test_more_shards_than_kernels_and_a_one_kernel_trace_are_refused_with_a_sentence(sharding):
    async with sharding.client() as http:
        more = await create(http, [{"gpu_config": "SM7_QV100", "count": 1, "shards": 16}], status=422)
        one = await create(
            http, [{"gpu_config": "SM7_QV100", "count": 1, "shards": 2}], "one-kernel", status=422
        )
        assert (await http.get("/api/runs")).json() == []
    assert more["detail"] == (
        "trace tinyformer-step-sm70 cannot run in 16 shards on SM7_QV100: the trace has 15 "
        "kernels, fewer than the 16 shards asked for; use at most 15 shards"
    )
    assert "only one kernel" in one["detail"] and "use shards: 1" in one["detail"]


async def test_a_warm_up_that_leaves_no_speed_up_is_refused_with_a_sentence(sharding):
    async with sharding.client() as http:
        entry = {"gpu_config": "SM7_QV100", "count": 1, "shards": 3, "warmup_kernels": 14}
        refused = await create(http, [entry], status=422)
        assert (await http.get("/api/runs")).json() == []
    assert refused["detail"].startswith(
        "trace tinyformer-step-sm70 cannot run in 3 shards on SM7_QV100: 14 warm-up kernels leave no speed-up"
    )


async def test_an_unsharded_run_reads_exactly_as_before(sharding):
    async with sharding.client() as http:
        run = await create(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        await simulate(http, run["sims"][0])
        run = (await http.get(f"/api/runs/{run['id']}")).json()
        kernels = (await http.get(f"/api/runs/{run['id']}/kernels")).json()
    assert run["entries"] == [{"gpu_config": "SM7_QV100", "count": 1}]
    assert "shard" not in run["sims"][0] and "retry_of" not in run["sims"][0]
    assert all("warmup" not in k for k in kernels)
    assert [k["gpu_sim_cycle"] for k in kernels] == CYCLES


async def test_a_sharded_run_merges_into_one_result(sharding):
    async with sharding.client() as http:
        run = await create(http, [{"gpu_config": "SM7_QV100", "count": 2, "shards": 3}])
        assert run["entries"] == [{"gpu_config": "SM7_QV100", "count": 2, "shards": 3, "warmup_kernels": 1}]
        sims = run["sims"]
        assert [(s["replica"], s["shard"]["index"]) for s in sims] == [
            (r, i) for r in range(2) for i in range(3)
        ]
        shards = [s["shard"] for s in sims[:3]]
        assert shards[0]["kernel_first"] == 0 and shards[-1]["kernel_last"] == 14
        assert [s["warmup_kernels"] for s in shards] == [0, 1, 1]
        assert [s["kernels_total"] for s in sims[:3]] == [
            s["kernel_last"] - s["kernel_first"] + 1 for s in shards
        ]
        for sim in sims:
            await simulate(http, sim)
        run = (await http.get(f"/api/runs/{run['id']}")).json()
        assert run["state"] == "succeeded"
        assert sum(s["kernels_done"] for s in run["sims"][:3]) == 15
        assert all(s["kernels_done"] == s["kernels_total"] for s in run["sims"])
        kernels = (await http.get(f"/api/runs/{run['id']}/kernels")).json()
        for replica in range(2):
            ids = {s["id"] for s in run["sims"] if s["replica"] == replica}
            mine = [k for k in kernels if k["sim_id"] in ids]
            assert [k["kernel_index"] for k in mine] == list(range(15))
            assert [k["gpu_sim_cycle"] for k in mine] == CYCLES  # the blocks it replayed, in place
        comparison = (await http.get(f"/api/runs/{run['id']}/comparison")).json()
        assert len(comparison["rows"]) == 15 and all(r["sim_ns"]["SM7_QV100"] for r in comparison["rows"])
        second = run["sims"][1]
        own = (await http.get(f"/api/sims/{second['id']}/results")).json()
        warm = [k["kernel_index"] for k in own["kernels"] if k.get("warmup")]
        assert warm == [second["shard"]["kernel_first"] - 1]
        bundle = json.loads((await http.get(f"/api/runs/{run['id']}/results")).content)
        assert sum(len(s["kernels"]) for s in bundle["sims"]) == 30
        assert not any(k.get("warmup") for s in bundle["sims"] for k in s["kernels"])
        perfetto = (await http.get(f"/api/runs/{run['id']}/perfetto")).json()
        slices = [e for e in perfetto["traceEvents"] if e["ph"] == "X" and e["tid"] == 1]
        assert [e["args"]["kernel_index"] for e in slices] == list(range(15))
        assert all(a["ts"] + a["dur"] == pytest.approx(b["ts"]) for a, b in zip(slices, slices[1:]))
        threads = [e for e in perfetto["traceEvents"] if e.get("name") == "thread_name"]
        assert len(threads) == 2
        log = (await http.get(f"/api/sims/{second['id']}/log")).text
        assert log.count("kernel_name = ") == second["kernels_total"] + 1


async def test_a_failed_shard_is_retried_alone_in_its_run(sharding):
    async with sharding.client() as http:
        run = await create(http, [{"gpu_config": "SM7_QV100", "count": 1, "shards": 3}])
        first, second, third = run["sims"]
        await simulate(http, first)
        await simulate(http, second, fail=True)
        await simulate(http, third)
        run = (await http.get(f"/api/runs/{run['id']}")).json()
        assert run["state"] == "partial"
        retried = await http.post(f"/api/runs/{run['id']}/retry")
        assert retried.status_code == 201, retried.text
        again = retried.json()
        assert again["id"] == run["id"] and again["state"] == "active"
        new = [s for s in again["sims"] if s["id"] not in {first["id"], second["id"], third["id"]}]
        assert len(again["sims"]) == 3 and len(new) == 1
        assert new[0]["retry_of"] == second["id"] and new[0]["shard"] == second["shard"]
        assert new[0]["state"] == "pending"
        assert (await http.get(f"/api/sims/{second['id']}/results")).status_code == 200  # still there
        await simulate(http, new[0])
        run = (await http.get(f"/api/runs/{run['id']}")).json()
        assert run["state"] == "succeeded" and run["sim_counts"] == {"succeeded": 3}
        kernels = (await http.get(f"/api/runs/{run['id']}/kernels")).json()
        assert [k["kernel_index"] for k in kernels] == list(range(15))
        nothing = await http.post(f"/api/runs/{run['id']}/retry")
        assert nothing.status_code == 409 and "no failed sims or cancelled shards" in nothing.json()["detail"]
        assert (await http.delete(f"/api/runs/{run['id']}")).status_code == 204
        assert (await http.get(f"/api/sims/{second['id']}/results")).status_code == 404


async def test_a_cancelled_shard_is_retried_in_place_and_its_run_can_succeed(sharding):
    """Issue 32: a run cancelled while one shard still ran is `partial` (the others succeeded);
    retry used to refuse it (409, no failed sims), so the run stayed partial for good."""
    async with sharding.client() as http:
        run = await create(http, [{"gpu_config": "SM7_QV100", "count": 1, "shards": 3}])
        first, second, third = run["sims"]
        await simulate(http, first)
        await simulate(http, third)
        run = (await http.post(f"/api/runs/{run['id']}/cancel")).json()
        assert run["state"] == "partial" and run["sim_counts"] == {"succeeded": 2, "cancelled": 1}
        retried = await http.post(f"/api/runs/{run['id']}/retry")
        assert retried.status_code == 201, retried.text
        [new] = [s for s in retried.json()["sims"] if s.get("retry_of") == second["id"]]
        assert new["shard"] == second["shard"] and new["state"] == "pending"
        await simulate(http, new)
        run = (await http.get(f"/api/runs/{run['id']}")).json()
        assert run["state"] == "succeeded" and run["sim_counts"] == {"succeeded": 3}
        kernels = (await http.get(f"/api/runs/{run['id']}/kernels")).json()
        assert [k["kernel_index"] for k in kernels] == list(range(15))
        nothing = await http.post(f"/api/runs/{run['id']}/retry")
        assert nothing.json()["detail"] == f"run {run['id']} has no failed sims or cancelled shards to retry"


async def test_a_sweep_in_shards_splits_each_variant_and_merges_by_label(make_server, accelsim_dir):
    """Issues 22 and 23 together: each variant's replica is split, and its shards keep the
    variant's options and label through the merge and a retry."""
    from tests.conftest import write_config
    from tests.server.test_variants_api import QV100

    write_config(accelsim_dir, "SM7_QV100", QV100)
    server = await make_server(accelsim_dir=accelsim_dir)
    await server.store.traces.put_trace(ready_trace())
    entries = [
        {"gpu_config": "SM7_QV100", "count": 1, "shards": 3},
        {
            "gpu_config": "SM7_QV100",
            "count": 1,
            "shards": 2,
            "options": {"-gpgpu_n_clusters": "40"},
            "label": "QV100-40SM",
        },
    ]
    async with server.client() as http:
        run = await create(http, entries)
        shape = [(s.get("label"), s["shard"]["index"], s["shard"]["count"]) for s in run["sims"]]
        assert shape == [
            ("SM7_QV100", 0, 3),
            ("SM7_QV100", 1, 3),
            ("SM7_QV100", 2, 3),
            ("QV100-40SM", 0, 2),
            ("QV100-40SM", 1, 2),
        ]
        assert [s.get("options") for s in run["sims"][3:]] == [{"-gpgpu_n_clusters": "40"}] * 2
        failing = run["sims"][4]
        for sim in run["sims"]:
            await simulate(http, sim, fail=sim is failing)
        retried = (await http.post(f"/api/runs/{run['id']}/retry")).json()
        new = [s for s in retried["sims"] if s.get("retry_of") == failing["id"]]
        assert [(s.get("label"), s.get("options"), s["shard"]) for s in new] == [
            ("QV100-40SM", {"-gpgpu_n_clusters": "40"}, failing["shard"])
        ]
        await simulate(http, new[0])
        run = (await http.get(f"/api/runs/{run['id']}")).json()
        assert run["state"] == "succeeded"
        comparison = (await http.get(f"/api/runs/{run['id']}/comparison")).json()
        assert len(comparison["rows"]) == 15
        assert all(set(r["sim_ns"]) == {"SM7_QV100", "QV100-40SM"} for r in comparison["rows"])
        kernels = (await http.get(f"/api/runs/{run['id']}/kernels")).json()
        for ids in (
            {s["id"] for s in run["sims"] if s.get("label") == "SM7_QV100"},
            {s["id"] for s in run["sims"] if s.get("label") == "QV100-40SM"},
        ):
            assert [k["kernel_index"] for k in kernels if k["sim_id"] in ids] == list(range(15))


ODD_LIST = (
    "# kernel-99.traceg: a comment\n"
    "MemcpyHtoD,0x1,256\n"
    + "".join(f"kernel-{n}.traceg\n" for n in range(1, 6))
    + "MemcpyDtoH,0x00007f4c5e000000,256\n"
    + "../../../work/atk/ESCAPED/made-by-shard\n"
    + "  kernel-99.traceg\n"
    + "\n"
    + "".join(f"kernel-{n}.traceg\n" for n in range(6, 16))
)


async def test_lines_accel_sim_ignores_count_no_kernel_in_the_plan_or_the_merge(sharding):
    """Finding: a MemcpyDtoH (or any line not `kernel...` / `MemcpyHtoD...`) in kernelslist.g was
    planned as a 16th kernel and shifted every later kernel by one. Accel-Sim ignores such lines."""
    traces = sharding.settings.traces_dir / "tinyformer-step-sm70" / "traces"
    (traces / "kernelslist.g").write_text(ODD_LIST)
    async with sharding.client() as http:
        more = await create(http, [{"gpu_config": "SM7_QV100", "count": 1, "shards": 16}], status=422)
        assert "the trace has 15 kernels" in more["detail"]
        run = await create(http, [{"gpu_config": "SM7_QV100", "count": 1, "shards": 3}])
        shards = [s["shard"] for s in run["sims"]]
        assert shards[0]["kernel_first"] == 0 and shards[-1]["kernel_last"] == 14
        assert all(a["kernel_last"] + 1 == b["kernel_first"] for a, b in zip(shards, shards[1:]))
        for sim in run["sims"]:
            await simulate(http, sim)
        kernels = (await http.get(f"/api/runs/{run['id']}/kernels")).json()
        assert [k["kernel_index"] for k in kernels] == list(range(15))
        assert [k["gpu_sim_cycle"] for k in kernels] == CYCLES
        comparison = (await http.get(f"/api/runs/{run['id']}/comparison")).json()
        assert len(comparison["rows"]) == 15


async def test_a_kernel_line_that_is_a_path_is_refused_when_planning(sharding):
    traces = sharding.settings.traces_dir / "tinyformer-step-sm70" / "traces"
    (traces / "kernelslist.g").write_text("kernel-1.traceg\nkernel/../../../x\nkernel-2.traceg\n")
    async with sharding.client() as http:
        body = await create(http, [{"gpu_config": "SM7_QV100", "count": 1, "shards": 2}], status=422)
        assert (await http.get("/api/runs")).json() == []
    assert body["detail"] == (
        "trace tinyformer-step-sm70 cannot be split into shards: its traces/kernelslist.g line 2: "
        "kernel trace 'kernel/../../../x' is not a file name (a kernel trace must be a file beside "
        "kernelslist.g)"
    )


def _write_step_inputs(trace_dir: Path) -> tuple:
    """3 measured steps of 5 kernels each on one stream, kernel N of the trace the Nth launch."""
    from cascade_core.timeline.formats import CorrectedTimeline, KernelMapping

    steps, mapped = [], []
    for s in range(3):
        start = s * 100_000
        kernels = [
            {"name": f"k{5 * s + i}", "start_ns": start + 1000 + i * 2000, "duration_ns": 1500, "stream": 7}
            for i in range(5)
        ]
        steps.append(
            {
                "index": s,
                "name": f"ProfilerStep#{s}",
                "cpu_start_ns": start,
                "cpu_wall_ns": 12_000,
                "kernels": kernels,
            }
        )
        ids = [5 * s + i + 1 for i in range(5)]
        mapped.append(
            {"index": s, "name": f"ProfilerStep#{s}", "kernel_ids": ids, "mapped": 5, "unmapped": 0}
        )
    timeline = CorrectedTimeline.model_validate({"steps": steps})
    mapping = KernelMapping.model_validate({"trace_kernels": 15, "steps": mapped})
    (trace_dir / "corrected_timeline.json").write_text(timeline.model_dump_json())
    (trace_dir / "kernel_mapping.json").write_text(mapping.model_dump_json())
    return timeline, mapping


async def test_a_sharded_replica_has_one_step_timeline_of_all_its_shards(sharding):
    """Finding: each shard sent its own partial step timeline (3-6 of 15 kernels, warm-up counted
    twice). A sharded replica's timeline is the server's, from the merged owned kernels of all its
    shards, once all have succeeded: the one an unsharded sim of the same kernels gives."""
    from cascade_core.timeline.replay import sim_kernel_times
    from cascade_core.timeline.replay import simulate as replay

    trace = await sharding.store.traces.get_trace("tinyformer-step-sm70")
    await sharding.store.traces.put_trace(trace.model_copy(update={"has_step_timeline": True}))
    timeline, mapping = _write_step_inputs(sharding.settings.traces_dir / trace.id)
    async with sharding.client() as http:
        whole = await create(http, [{"gpu_config": "SM7_QV100", "count": 1}])
        await simulate(http, whole["sims"][0])
        whole_kernels = [
            KernelStat.model_validate(k) for k in (await http.get(f"/api/runs/{whole['id']}/kernels")).json()
        ]
        expected = replay(timeline, mapping, sim_kernel_times(whole_kernels))

        run = await create(http, [{"gpu_config": "SM7_QV100", "count": 2, "shards": 3}])
        sims = run["sims"]
        url = f"/api/runs/{run['id']}/step-timelines"
        for sim in sims[:5]:  # replica 0 whole, replica 1 missing its last shard
            await simulate(http, sim)
        # a shard's own partial timeline (as an older worker sent it) is never shown
        partial = {"simulated": {"meta": {}, "steps": [], "summary": {}}, "compare": None}
        assert (await http.post(f"/api/sims/{sims[1]['id']}/step-timeline", json=partial)).status_code in (
            200,
            204,
        )
        timelines = (await http.get(url)).json()
        assert [(t["replica"], t["sim_id"]) for t in timelines] == [(0, sims[0]["id"])]
        await simulate(http, sims[5])
        timelines = (await http.get(url)).json()
        assert [(t["replica"], t["sim_id"]) for t in timelines] == [(0, sims[0]["id"]), (1, sims[3]["id"])]
        for t in timelines:
            coverage = t["simulated"]["summary"]["simulation"]["coverage"]
            assert (coverage["kernels"], coverage["simulated_kernels"]) == (15, 15)
            assert [s["wall_ns"] for s in t["simulated"]["steps"]] == [
                s["wall_ns"] for s in expected["steps"]
            ]
            assert t["simulated"]["meta"]["shards"] == 3 and t["compare"] is not None
        perfetto = await http.get(f"/api/runs/{run['id']}/perfetto")
        assert perfetto.status_code == 200
