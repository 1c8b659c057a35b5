"""What the server takes of the power notes in a sim's log (issue 34; an attacker's findings):
only a power sim's, only for kernels of its own range and not for kernels estimated from another;
AccelWattch's switches are the run entry's `power`, never options; the stand-in is named as the
reason before a config's missing model."""

from __future__ import annotations

from cascade_core import log_notes
from tests.conftest import ready_trace, write_config
from tests.helpers import create_run, recorded_log

NOTE = log_notes.KernelPowerNote(0, 60.0, 70.0, 50.0, (("CONSTP", 60.0),))


def note(index: int, avg: float = 60.0) -> str:
    return log_notes.power_line(log_notes.KernelPowerNote(index, avg, avg + 10, avg - 10, (("CONSTP", avg),)))


async def power_server(make_server, tmp_path, **settings):
    root = tmp_path / "accelsim"
    write_config(
        root,
        "SM7_QV100",
        "-gpgpu_compute_capability_major 7\n-gpgpu_compute_capability_minor 0\n"
        "-gpgpu_clock_domains 1132.0:1132.0:1132.0:850.0\n",
    )
    (root / "gpu-simulator/gpgpu-sim/configs/tested-cfgs/SM7_QV100/accelwattch_sass_sim.xml").write_text(
        "<x/>"
    )
    server = await make_server(accelsim_dir=root, **settings)
    await server.store.traces.put_trace(ready_trace())
    return server


async def post(http, sim_id: str, lines: list[str], seq: int = 0) -> None:
    resp = await http.post(f"/api/sims/{sim_id}/logs", json={"seq": seq, "lines": lines})
    assert resp.status_code == 204, resp.text


async def test_only_a_power_sim_s_notes_for_its_own_kernels_are_stored(make_server, tmp_path):
    server = await power_server(make_server, tmp_path)
    async with server.client() as http:
        powered = (await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1, "power": True}]))["sims"][
            0
        ]
        plain = (await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}]))["sims"][0]
        sharded = await create_run(
            http, [{"gpu_config": "SM7_QV100", "count": 1, "shards": 3, "power": True}]
        )
        log = recorded_log("SM7_QV100")
        for sim in (powered, plain):
            await post(http, sim["id"], [*log, note(0), note(14, 80.0)])
        second = sharded["sims"][1]
        first, last = second["shard"]["kernel_first"], second["shard"]["kernel_last"]
        await post(http, second["id"], [note(first - 1), note(first), note(last + 1)])
        kernels = (await http.get(f"/api/runs/{powered['run_id']}/kernels")).json()
        plain_kernels = (await http.get(f"/api/runs/{plain['run_id']}/kernels")).json()
    assert [(k["kernel_index"], k["power"]["avg_w"]) for k in kernels if "power" in k] == [
        (0, 60.0),
        (14, 80.0),
    ]
    assert kernels[0]["energy_j"] == 60.0 * kernels[0]["sim_time_ns"] * 1e-9
    assert not any("power" in k for k in plain_kernels)  # a sim without power: its notes are lines
    rows = await server.store.db.r.execute_fetchall(
        "SELECT kernel_index FROM kernel_power WHERE sim_id=?", (second["id"],)
    )
    assert [r[0] for r in rows] == [first]  # not its warm-up kernel, nor the next shard's


async def test_accelwattch_s_switches_are_the_entry_s_power_not_options(make_server, tmp_path):
    server = await power_server(make_server, tmp_path)
    async with server.client() as http:
        for name in ("-power_simulation_enabled", "-accelwattch_xml_file"):
            resp = await http.post(
                "/api/runs",
                json={
                    "trace_id": "tinyformer-step-sm70",
                    "entries": [{"gpu_config": "SM7_QV100", "count": 1, "options": {name: "1"}}],
                },
            )
            assert resp.status_code == 422
            assert f"option '{name}' is set by Cascade itself: give the run entry" in str(
                resp.json()["detail"]
            )


async def test_the_stand_in_is_the_reason_given_before_a_missing_model(make_server):
    server = await make_server(launcher="local", local_slots=1)
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        resp = await http.post(
            "/api/runs",
            json={
                "trace_id": "tinyformer-step-sm70",
                "entries": [{"gpu_config": "SM7_QV100", "count": 1, "power": True}],
            },
        )
    assert resp.status_code == 422 and resp.json()["detail"].startswith("power needs the real simulator")
