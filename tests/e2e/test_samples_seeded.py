"""The sample trace and the sample run, seeded from samples/ through the real store."""

from __future__ import annotations

import gzip
from pathlib import Path

from cascade_core.models import RunEntry
from cascade_server.gpu_configs import scan_gpu_configs
from cascade_server.samples import SAMPLE_CONFIGS, SAMPLE_TRACE_ID, SEEDED_KEY, sample_trace, seed_samples

REPO = Path(__file__).resolve().parents[2]


async def test_samples_are_seeded_once_and_read_like_live_data(make_server):
    server = await make_server(samples=True)  # `cascade serve` seeds at start
    await server.restart()
    await seed_samples(server.store, server.ingest, server.settings)
    async with server.client() as http:
        traces = [t for t in (await http.get("/api/traces")).json() if t["sample"]]
        assert [t["id"] for t in traces] == [SAMPLE_TRACE_ID]
        trace = (await http.get(f"/api/traces/{SAMPLE_TRACE_ID}")).json()
        assert (trace["state"], trace["trace_gpu_arch"], trace["kernel_count"]) == ("ready", "sm_70", 15)
        assert trace["kernels"][2]["name"] == "_Z11sgemm_tiledILi64ELi64ELi16EEvPKfS1_S1_Pfiii"
        assert trace["kernels"][2]["instructions"] == 119424

        runs = [r for r in (await http.get("/api/runs")).json() if r["sample"]]
        assert len(runs) == 1 and runs[0]["replay"] and runs[0]["state"] == "succeeded"
        run = (await http.get(f"/api/runs/{runs[0]['id']}")).json()
        assert sorted(s["gpu_config"] for s in run["sims"]) == sorted(SAMPLE_CONFIGS)
        for sim in run["sims"]:
            assert (sim["state"], sim["kernels_done"], sim["kernels_total"], sim["exit_code"]) == (
                "succeeded",
                15,
                15,
                0,
            )
            recording = gzip.decompress(
                (REPO / "samples" / "recordings" / f"{sim['gpu_config']}.log.gz").read_bytes()
            )
            assert (await http.get(f"/api/sims/{sim['id']}/log")).content == recording
            files = (await http.get(f"/api/sims/{sim['id']}/files")).json()
            assert [f["name"] for f in files] == ["accelsim.log.gz"]
        cycles = {s["gpu_config"]: s["latest"]["gpu_tot_sim_cycle"] for s in run["sims"]}
        # From the recorded logs (samples-real README, "Results").
        assert cycles == {"SM7_QV100": 169588, "SM7_GV100": 170859, "SM7_TITANV": 96136}
        kernels = (await http.get(f"/api/runs/{run['id']}/kernels")).json()
        assert len(kernels) == 45

        resp = await http.post(
            "/api/runs",
            json={"trace_id": SAMPLE_TRACE_ID, "entries": [{"gpu_config": "SM7_QV100", "count": 1}]},
        )
        assert resp.status_code == 409
        cancel = await http.post(f"/api/runs/{run['id']}/cancel")
        assert cancel.json()["state"] == "succeeded"


async def test_no_samples_when_turned_off(make_server):
    server = await make_server(samples=False)
    async with server.client() as http:
        assert (await http.get("/api/traces")).json() == []
        assert (await http.get("/api/runs")).json() == []


async def test_an_interrupted_seed_is_closed_and_seeded_again(make_server):
    server = await make_server(samples=False)
    store, settings = server.store, server.settings
    # What a server killed mid-seed leaves: the trace and a sample run whose sims never finished.
    trace = sample_trace(settings.samples_dir)
    await store.traces.put_trace(trace)
    configs = scan_gpu_configs(settings.samples_dir / "accelsim")
    stale = await store.runs.create_run(
        trace, [RunEntry(gpu_config="SM7_QV100", count=1)], configs, sample=True, replay=True
    )
    assert await store.db.get_meta(SEEDED_KEY) is None
    await seed_samples(store, server.ingest, settings)
    old = await store.runs.get_run(stale.id)
    assert [(s.state, s.error) for s in old.sims] == [("failed", "seeding the sample was interrupted")]
    seeded = await store.runs.get_run(await store.db.get_meta(SEEDED_KEY))
    assert seeded.id != stale.id and {s.state for s in seeded.sims} == {"succeeded"}
