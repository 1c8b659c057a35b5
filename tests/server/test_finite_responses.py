"""Issue 32, item 4: no response carries a number that is not finite. Clock domains of `1e400:…`,
`inf:…`, `1e-320:…` made kernels 0 ns or infinite, `/perfetto` sent a bare `Infinity` (no JSON
parser but Python's reads it) and the CLI printed 300-digit ratios. Variants' clocks are bounded
now (test_option_bounds.py); here a run stored before that (a clock of 1e-320), a config file with
a clock of 1e400 and a log with a 400-digit simulation rate go through every GET route: each
JSON body parses as strict JSON, and no number outside a kernel's `stats` map (where Accel-Sim's
own `nan` travels as the string "NaN", by contract) is "NaN" or "Infinity"."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from cascade_core.models import GpuConfig, RunEntry
from cascade_server.api import strict_json
from cascade_server.api.route_tables import API_ROUTE_TABLES
from tests.conftest import ready_trace, write_config

NON_FINITE = ("NaN", "Infinity", "-Infinity")
HEAD = "-gpgpu_compute_capability_major 7\n-gpgpu_compute_capability_minor 0\n"


def block(uid: int) -> list[str]:
    return [
        f"launching kernel name: _Z6kernel{uid}v uid: {uid} cuda_stream_id: 0",
        f"kernel_name = _Z6kernel{uid}v ",
        f"kernel_launch_uid = {uid} ",
        "gpu_sim_cycle = 6146",
        "gpu_sim_insn = 53248",
        "gpu_ipc =       8.6638",
        "gpu_occupancy = -nan% ",
        "L2_BW_total = inf GB/Sec",
        "gpu_tot_sim_cycle = 6146",
        "gpu_tot_sim_insn = 53248",
        "gpu_tot_ipc = inf",
        "gpgpu_simulation_rate = " + "9" * 400 + " (inst/sec)",
        "gpgpu_silicon_slowdown = 368369x",
    ]


def _refuse(constant: str) -> None:
    raise ValueError(f"bare {constant} in a JSON body")


def non_finite(value: Any, path: str = "") -> list[str]:
    """Where a value that is no finite number sits, outside `stats` maps."""
    if isinstance(value, float | int) and not isinstance(value, bool):
        return [] if value == value and abs(value) != float("inf") else [path]
    if isinstance(value, str):
        return [path] if value in NON_FINITE else []
    if isinstance(value, dict):
        return [p for key, item in value.items() if key != "stats" for p in non_finite(item, f"{path}.{key}")]
    if isinstance(value, list):
        return [p for n, item in enumerate(value) for p in non_finite(item, f"{path}[{n}]")]
    return []


def get_paths() -> list[str]:
    return [
        route.path
        for table in API_ROUTE_TABLES
        for route in table
        if isinstance(route, web.RouteDef) and route.method == "GET"
    ]


async def test_no_route_sends_a_number_that_is_not_finite(make_server, accelsim_dir):
    write_config(accelsim_dir, "SM7_HUGECLOCK", HEAD + "-gpgpu_clock_domains 1e400:1132.0:1132.0:850.0\n")
    server = await make_server(accelsim_dir=accelsim_dir)
    trace = ready_trace()
    await server.store.traces.put_trace(trace)
    # A run stored before clocks were bounded: its config's clock is 1e-320 MHz.
    tiny = GpuConfig(name="SM7_QV100", arch="sm_70", core_clock_mhz=1e-320)
    run = await server.store.runs.create_run(
        trace, [RunEntry(gpu_config="SM7_QV100", count=1)], {"SM7_QV100": tiny}
    )
    sim_id = run.sims[0].id
    await server.store.sim_states.mark_launching(sim_id, None)
    async with server.client() as http:
        url = f"/api/sims/{sim_id}"
        assert (await http.post(f"{url}/heartbeat", json={"state": "running"})).status_code == 200
        lines = [*block(1), *block(2)]
        assert (await http.post(f"{url}/logs", json={"seq": 0, "lines": lines})).status_code == 204
        put = await http.put(
            f"{url}/files/out.txt", content=b"x", headers={"Content-Type": "application/octet-stream"}
        )
        assert put.status_code == 200
        done = await http.post(f"{url}/heartbeat", json={"state": "succeeded", "exit_code": 0})
        assert done.status_code == 200

        values = {
            "{run_id}": run.id,
            "{sim_id}": sim_id,
            "{trace_id}": trace.id,
            "{name}": "out.txt",
            "{path:.+}": "traces/kernelslist.g",
        }
        checked = []
        for template in get_paths():
            path = template
            for name, value in values.items():
                path = path.replace(name, value)
            if template == "/api/gpu-configs/{name}/options":
                path = "/api/gpu-configs/SM7_QV100/options"
            if path.endswith("/events"):
                async with http.stream("GET", path) as resp:
                    text = await anext(resp.aiter_lines())
                    assert text.startswith("data: ")
                    text = text.removeprefix("data: ")
            else:
                resp = await http.get(path)
                if "json" not in resp.headers.get("content-type", ""):
                    continue
                text = resp.text
            body = json.loads(text, parse_constant=_refuse)  # strict JSON: no bare NaN or Infinity
            assert non_finite(body) == [], (path, non_finite(body))
            checked.append(template)
        assert len(checked) >= 15, checked
        # the kernels are there, without a time rather than an infinite one
        kernels = (await http.get(f"/api/runs/{run.id}/kernels")).json()
        assert [k["sim_time_ns"] for k in kernels] == [None, None]
        results = (await http.get(f"/api/sims/{sim_id}/results")).json()
        assert results["kernels"][0]["stats"]["gpu_occupancy"] == "NaN"  # Accel-Sim's own nan, by contract
        assert results["sim"]["latest"]["sim_rate_ips"] is None  # 400 digits of rate: no number
        configs = {c["name"] for c in (await http.get("/api/gpu-configs")).json()}
        assert "SM7_QV100" in configs and "SM7_HUGECLOCK" not in configs


def test_the_json_layer_sends_null_for_a_number_that_is_not_finite():
    body = strict_json.dumps({"a": [1.5, float("inf")], "b": {"c": float("nan")}, "d": "Infinity"})
    assert json.loads(body, parse_constant=_refuse) == {"a": [1.5, None], "b": {"c": None}, "d": "Infinity"}
