"""Issue 32: a sweep's `cascade results` exports carry each variant's config, swept option and value
(`option_value`, a number: the unmodified config's own value for its row) and its time as a multiple of the
unmodified config's, in every view and format; a run without variants exports as before."""

from __future__ import annotations

import asyncio
import csv
import io
import json

import pytest

from cascade_tui.scripting import results_command
from tests.conftest import TOKEN, ready_trace, write_config
from tests.helpers import post_run, recorded_log, wait_until
from tests.server.test_variants_api import QV100, finish, scaled

FORTY, TWENTY = "SM7_QV100[gpgpu_n_clusters=40]", "SM7_QV100[gpgpu_n_clusters=20]"


@pytest.fixture
async def swept(make_server, accelsim_dir):
    """A finished sweep of -gpgpu_n_clusters on SM7_QV100 (its config says 80): 40 clusters take
    twice as long as the unmodified config, 20 three times."""
    write_config(accelsim_dir, "SM7_QV100", QV100)
    server = await make_server(accelsim_dir=accelsim_dir)
    await server.store.traces.put_trace(ready_trace())
    log = recorded_log("SM7_QV100")
    entries = [
        {"gpu_config": "SM7_QV100", "count": 1},
        {"gpu_config": "SM7_QV100", "count": 1, "options": {"-gpgpu_n_clusters": "40"}},
        {"gpu_config": "SM7_QV100", "count": 1, "options": {"-gpgpu_n_clusters": "20"}},
    ]
    async with server.client() as http:
        run = (await post_run(http, entries)).json()
        for sim in run["sims"]:
            factor = {"40": 2, "20": 3}.get(sim["options"].get("-gpgpu_n_clusters", ""), 1)
            await finish(http, sim["id"], scaled(log, factor))

        async def done():
            return (await http.get(f"/api/runs/{run['id']}")).json()["state"] == "succeeded"

        await wait_until(done, 30)
    return server, run["id"]


async def results(server, capsys, *args: str) -> str:
    argv = [*args, "--url", server.url, "--token", TOKEN]
    assert await asyncio.to_thread(results_command.main, argv) == 0
    return capsys.readouterr().out


async def test_the_totals_have_option_value_and_the_multiple_of_the_base(swept, capsys):
    server, run_id = swept
    rows = list(csv.DictReader(io.StringIO(await results(server, capsys, run_id, "--format", "csv"))))
    by_config = {r["config"]: r for r in rows}
    assert [(r["gpu_config"], r["option"], r["option_value"]) for r in rows] == [
        ("SM7_QV100", "-gpgpu_n_clusters", "80.0"),  # the config's own value
        ("SM7_QV100", "-gpgpu_n_clusters", "40.0"),
        ("SM7_QV100", "-gpgpu_n_clusters", "20.0"),
    ]
    assert float(by_config["SM7_QV100"]["vs_base"]) == 1.0
    assert float(by_config[FORTY]["vs_base"]) == pytest.approx(2.0, rel=1e-3)
    assert float(by_config[TWENTY]["vs_base"]) == pytest.approx(3.0, rel=1e-3)
    as_json = json.loads(await results(server, capsys, run_id, "--format", "json"))
    assert [(r["option"], r["option_value"]) for r in as_json][1] == ("-gpgpu_n_clusters", 40.0)  # a number
    table = await results(server, capsys, run_id)
    assert "x base" in table.splitlines()[0] and "2.00x" in table


async def test_kernels_stats_and_comparison_name_the_variant_and_its_value(swept, capsys):
    server, run_id = swept
    kernels = json.loads(await results(server, capsys, run_id, "--kernels", "--format", "json"))
    forty = [k for k in kernels if k["variant"] == FORTY]
    assert len(forty) == 15 and {k["gpu_config"] for k in kernels} == {"SM7_QV100"}
    assert {(k["option"], k["option_value"]) for k in forty} == {("-gpgpu_n_clusters", 40.0)}
    assert all(k["vs_base"] == pytest.approx(2.0, rel=1e-3) for k in forty)
    stats = list(
        csv.DictReader(
            io.StringIO(
                await results(server, capsys, run_id, "--stats", "--key", "gpu_sim_cycle", "--format", "csv")
            )
        )
    )
    # the stat's own `value` beside the swept `option_value`
    assert {(r["variant"], r["option_value"], r["value"]) for r in stats if r["kernel_index"] == "0"} == {
        ("SM7_QV100", "80.0", "6146.0"),
        (FORTY, "40.0", "12292.0"),
        (TWENTY, "20.0", "18438.0"),
    }
    compared = json.loads(await results(server, capsys, run_id, "--comparison", "--format", "json"))
    assert compared[0][f"{TWENTY} x base"] == pytest.approx(3.0, rel=1e-3)
    assert "SM7_QV100 x base" not in compared[0]  # the base is no multiple of itself


async def test_a_run_without_variants_exports_as_before(make_server, accelsim_dir, capsys):
    server = await make_server(accelsim_dir=accelsim_dir)
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = (await post_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])).json()
        await finish(http, run["sims"][0]["id"], recorded_log("SM7_QV100"))
    header = (await results(server, capsys, run["id"], "--format", "csv")).splitlines()[0]
    assert "option" not in header and "vs_base" not in header
    kernels = (await results(server, capsys, run["id"], "--kernels", "--format", "csv")).splitlines()[0]
    assert kernels.startswith("gpu_config,replica,") and "variant" not in kernels
