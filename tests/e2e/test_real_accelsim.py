"""Real Accel-Sim through the product: `cascade simulator install` (reusing the build .ci/run
made), then `cascade serve` and `cascade run start --wait` as a user runs them, with no
LD_LIBRARY_PATH in the server's environment on a machine whose ld.so.conf lists another CUDA.
Every kernel's cycles and instructions must equal the real logs in samples-real/runs/, which the
same sources produced. Each demo sim is ~35 s of a core: one sim per demo trace, both at once."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from pathlib import Path

import pytest

from cascade_core import simulator_layout as layout
from tests.accelsim_build import (
    finished_prefix,
    install_into,
    installed_serve,
    other_cuda_in_ld_so_conf,
    plain_env,
    real_kernel_stats,
)
from tests.conftest import ready_trace
from tests.helpers import Result, create_run, finished_run, run_cascade

pytestmark = [pytest.mark.accelsim, pytest.mark.timeout(600)]

# (trace, config): both demo traces, on two configs.
RUNS = [("tinyformer-step-sm70", "SM7_TITANV"), ("tinyformer-step-sm75", "SM75_RTX2060")]


def get(base: str, path: str, token: str):
    request = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def post(base: str, path: str, token: str, body: dict):
    request = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def wait_for(check, timeout: float, what: str, log: Path):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except OSError as exc:
            last = exc
        else:
            if last:
                return last
        time.sleep(0.5)
    raise AssertionError(f"{what} not within {timeout} s (last: {last!r})\n{log.read_text()[-3000:]}")


async def run_start_wait(trace: str, config: str, env: dict[str, str]) -> Result:
    return await run_cascade("run", "start", "--trace", trace, "--config", config, "--wait", env=env)


def test_demo_traces_simulate_for_real_after_install(tmp_path: Path) -> None:
    env = plain_env(tmp_path / "home")
    data = tmp_path / "data"
    installed = install_into(data, env)
    assert installed.returncode == 0, installed.stderr
    assert "smoke run passed" in installed.stdout

    serve = installed_serve(tmp_path, env)
    asyncio.run(serve.start())
    log = serve.log
    try:
        base, token = serve.url, (data / "token").read_text().strip()
        launcher = wait_for(lambda: get(base, "/api/launcher", token), 60, "the launcher", log)
        simulator = launcher["simulator"]
        assert simulator["kind"] == "installed" and simulator["smoke_passed"] is True, simulator
        assert simulator["configs"] >= 5 and simulator["problem"] is None

        def demo_ready():
            traces = {t["id"]: t["state"] for t in get(base, "/api/traces", token)}
            return all(traces.get(trace) == "ready" for trace, _ in RUNS)

        wait_for(demo_ready, 180, "the demo traces ready", log)
        client_env = {**env, "CASCADE_URL": base, "CASCADE_TOKEN": token}

        async def both():
            return await asyncio.gather(*(run_start_wait(t, c, client_env) for t, c in RUNS))

        results = asyncio.run(both())
        for (trace, config), (code, out, err) in zip(RUNS, results):
            assert code == 0, f"{trace} on {config}: exit {code}\n{out}\n{err}\n{log.read_text()[-3000:]}"
            assert "stand-in" not in out + err and "replay" not in out + err
            run_id = out.strip().splitlines()[0]
            run = get(base, f"/api/runs/{run_id}", token)
            assert run["state"] == "succeeded" and run["replay"] is False, run
            kernels = get(base, f"/api/runs/{run_id}/kernels", token)
            got = [
                (k["gpu_sim_cycle"], k["gpu_sim_insn"])
                for k in sorted(kernels, key=lambda k: k["kernel_index"])
            ]
            assert got == real_kernel_stats(config), f"{trace} on {config}"
    finally:
        asyncio.run(serve.stop())


async def test_a_sim_that_dies_at_start_fails_with_the_loaders_line(local_server, tmp_path, monkeypatch):
    """A real accel-sim.out whose library folder is missing: the worker has no libcudart to put
    first, so the loader takes the machine's (another CUDA's, here) or none. The sim's error is
    the loader's own line, not just `exited with status 127`."""
    build = next(b for b in (finished_prefix() / "builds").iterdir() if layout.is_complete(b))
    real = layout.accelsim_dir(build)
    broken = tmp_path / "accel-sim-without-its-libs"
    for part in ("gpu-simulator/bin", "gpu-simulator/configs", "gpu-simulator/gpgpu-sim/configs"):
        (broken / part).parent.mkdir(parents=True, exist_ok=True)
        (broken / part).symlink_to(real / part)
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    server = await local_server(
        ready_trace("one-kernel", kernels=1), trace_dir=True, local_slots=1, accelsim_dir=broken
    )
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 1)], trace_id="one-kernel")
        assert run["replay"] is False
        sim = (await finished_run(http, run["id"]))["sims"][0]
    assert (sim["state"], sim["exit_code"]) == ("failed", 127)
    if other_cuda_in_ld_so_conf():
        assert sim["error"] == (
            "accel-sim.out: symbol lookup error: accel-sim.out: undefined symbol: "
            "_ZTI10shd_warp_t (exit status 127)"
        )
    else:
        assert sim["error"].startswith("accel-sim.out: error while loading shared libraries: libcudart.so")
