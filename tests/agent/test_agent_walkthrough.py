"""The agent prompt, played by a test: fetch the prompt from a real server, then follow its
procedure literally, running the prompt's own shell blocks (curl, jq, python3) against that server
with the local launcher's stand-in workers, and check the report they produce."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import statistics

import httpx
import pytest

from cascade_core.models import TraceState
from tests.conftest import TOKEN, LiveServer, ready_trace
from tests.helpers import store_real_timing, wait_until

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(240),
    pytest.mark.skipif(
        not (shutil.which("curl") and shutil.which("jq")), reason="the prompt's commands need curl and jq"
    ),
]

SM70_CONFIGS = ["SM7_GV100", "SM7_QV100", "SM7_TITANV"]  # the sm_70 configs under samples/accelsim
TRACE = "tinyformer-step-sm70"
KERNELS = 15
SPEC_GREP = "grep -inE 'error|abort|assert|fault|exception'"  # the spec's search, which matches `Default`


def bash_blocks(prompt: str) -> list[str]:
    return re.findall(r"^ *```bash\n(.*?)^ *```$", prompt, flags=re.S | re.M)


def block_with(prompt: str, marker: str) -> str:
    """The one shell block of the prompt that holds `marker`, dedented."""
    found = [b for b in bash_blocks(prompt) if marker in b]
    assert len(found) == 1, f"{len(found)} blocks hold {marker!r}"
    lines = found[0].splitlines()
    indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    return "\n".join(line[indent:] for line in lines) + "\n"


async def sh(script: str, server: LiveServer, **env: str) -> str:
    """Run a block as the agent would, in bash with the two variables the prompt asks for. Async:
    the server answers from this same event loop."""
    proc = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        script,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "CASCADE_URL": server.url, "CASCADE_TOKEN": TOKEN, **env},
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, f"exit {proc.returncode}: {err.decode()}{out.decode()}"
    return out.decode()


async def seed_traces(server: LiveServer) -> None:
    """Oldest to newest: a ready sm_75 trace, the sample trace, the sm_70 trace the agent should
    pick (with real timing), and a newer upload still in progress."""
    await server.store.traces.put_trace(ready_trace("older-sm75", arch="sm_75"))
    await server.store.traces.put_trace(ready_trace("sample-trace", sample=True))
    real = [
        {"kernel_id": i + 1, "kernel_name": f"_Z6kernel{i}v", "duration_ns": 2000.0 + 500 * i}
        for i in range(KERNELS)
    ]
    assert (await store_real_timing(server.store, ready_trace(TRACE), {"kernels": real})).has_real_timing
    uploading: TraceState = "uploading"
    await server.store.traces.put_trace(ready_trace("newest-upload", state=uploading, kernels=0))


@pytest.fixture
def worker_env(monkeypatch):
    monkeypatch.setenv("CASCADE_HEARTBEAT_INTERVAL_S", "0.5")
    monkeypatch.setenv("CASCADE_KILL_GRACE_S", "3")


async def test_agent_follows_the_prompt_to_a_stand_in_report(make_server, worker_env):
    server = await make_server(launcher="local", local_slots=3, replay_speed=50.0)
    await seed_traces(server)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as anonymous:
        prompt_resp = await anonymous.get("/agent-prompt.md")  # no token: the agent reads it first
        assert prompt_resp.status_code == 200
        prompt = prompt_resp.text
        assert server.url in prompt and TOKEN not in prompt
        health = (await anonymous.get("/api/health")).json()
        assert health["ok"] is True and health["auth"] is True

    # Connect: both variables are set.
    assert (await sh(block_with(prompt, "echo set"), server)).strip() == "set"

    # 1. Find the trace: the newest ready one that is not the sample.
    trace_id, arch, suggested = (
        await sh(block_with(prompt, 'select(.state == "ready"'), server)
    ).splitlines()
    assert (trace_id, arch, suggested) == (TRACE, "sm_70", "")

    # 2. Pick the configs: no suggested config, so every config of the trace's arch.
    configs = (await sh(block_with(prompt, "/api/gpu-configs"), server, ARCH=arch)).split()
    assert configs == SM70_CONFIGS

    # 3. Size: one each, 3 sims, under the 4 that need the user's yes.  4. Launch.
    body = json.dumps({"trace_id": trace_id, "entries": [{"gpu_config": c, "count": 1} for c in configs]})
    launch = block_with(prompt, "-X POST").replace(
        '{"trace_id": "<trace id>", "entries": [{"gpu_config": "<name>", "count": 1}]}', body
    )
    run_id, replay = (await sh(launch, server)).split()
    assert run_id.startswith("run-") and replay == "true"  # no Accel-Sim here: the stand-in runs

    # 5. Watch: poll with the prompt's command until the state is not `active`.
    watch = block_with(prompt, ".sim_counts | tostring")

    async def finished() -> list[str] | None:
        lines = (await sh(watch, server, RUN_ID=run_id)).splitlines()
        return lines if lines[0] != "active" else None

    state, counts, *sim_lines = await wait_until(finished, timeout=180, interval=0.5)
    assert state == "succeeded" and json.loads(counts) == {"succeeded": 3}
    assert [line.split()[0] for line in sim_lines] == SM70_CONFIGS

    # 6. Fetch. Every sim succeeded, but the prompt's failure search must stay quiet on a clean
    # log, where the spec's search trips on the config dump's `Default` and `deadlock_detect`.
    async with server.client() as http:
        run = (await http.get(f"/api/runs/{run_id}")).json()
        kernels = (await http.get(f"/api/runs/{run_id}/kernels")).json()
        comparison = (await http.get(f"/api/runs/{run_id}/comparison")).json()
        assert (await http.get(f"/api/runs/{run_id}/step-timelines")).json() == []  # no step timeline
    sim_id = run["sims"][0]["id"]
    failure_grep = block_with(prompt, "grep -inwE")
    assert await sh(failure_grep, server, SIM_ID=sim_id) == ""
    spec_grep = failure_grep.split("| grep -v")[0] + f"| {SPEC_GREP} || true"
    assert "Default" in await sh(spec_grep, server, SIM_ID=sim_id)

    # 7. Report, with the prompt's own script.
    report = (await sh(block_with(prompt, "python3 - "), server, RUN_ID=run_id)).splitlines()
    assert report[0] == f"run {run_id} on trace {TRACE}: succeeded (3 succeeded)"
    assert report[1].startswith("These are stand-in numbers, not a simulation of this trace")
    totals: dict[str, float] = {}
    config_of = {s["id"]: s["gpu_config"] for s in run["sims"]}
    for k in kernels:
        totals[config_of[k["sim_id"]]] = totals.get(config_of[k["sim_id"]], 0) + k["sim_time_ns"]
    for config in SM70_CONFIGS:
        line = next(x for x in report if x.startswith(f"{config}: median"))
        assert f"median {totals[config]:.1f} ns simulated" in line and "1 replicas" in line
    assert comparison["has_real_timing"] is True
    for config in SM70_CONFIGS:
        errors = [
            abs(r["sim_ns"][config] - r["real_ns"]) / r["real_ns"] * 100
            for r in comparison["rows"]
            if r["real_ns"] and r["sim_ns"].get(config) is not None
        ]
        assert f"{config}: MAPE {statistics.mean(errors):.1f}% over {len(errors)} kernels" in report
