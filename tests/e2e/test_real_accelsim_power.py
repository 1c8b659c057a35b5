"""Issue 34 with the real simulator, as a user runs it: `cascade run start --power` on the demo
trace on SM7_QV100. Every kernel's cycles are a run's without power (the real log in
samples-real/runs/, which this build reproduces exactly: test_real_accelsim.py); each kernel's
power is what a direct `accel-sim.out` run with AccelWattch writes in its
accelwattch_power_report.log (its first kernels: the simulation is deterministic and kernel by
kernel, so a list cut after them gives them the same numbers); energy is power times time. A
config without a power model is refused before any sim starts. One sim with power (about 2-3x
the 35 s of a demo sim) and a direct run of 3 kernels."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cascade_core import simulator_layout as layout
from cascade_core.power_report import POWER_OPTIONS, REPORT_NAME, PowerReportReader
from cascade_core.trace_inputs import KERNELSLIST
from cascade_worker import accelsim
from cascade_worker.kernel_list import TraceList, select_lines
from tests.accelsim_build import install_into, installed_serve, plain_env, real_kernel_stats
from tests.e2e.test_real_accelsim import get, wait_for

pytestmark = [pytest.mark.accelsim, pytest.mark.timeout(900)]

DEMO = "tinyformer-step-sm70"
REPO = Path(__file__).resolve().parents[2]
DIRECT_KERNELS = 3


def direct_power(tree: Path, config: str, into: Path) -> list:
    """AccelWattch's blocks of a direct run of the demo trace's first DIRECT_KERNELS kernels."""
    listed = TraceList(REPO / "samples" / "accelsim-traces" / DEMO / KERNELSLIST)
    trace = into / "trace"
    (trace / "traces").mkdir(parents=True)
    for name in listed.names[:DIRECT_KERNELS]:  # the simulator reads .traceg (and .xz), not .gz
        packed = listed.path.parent / (name + ".gz")
        (trace / "traces" / name).write_bytes(gzip.decompress(packed.read_bytes()))
    lines = select_lines(listed.lines, range(DIRECT_KERNELS))
    (trace / KERNELSLIST).write_text("\n".join(lines) + "\n")
    run_dir = into / "run"
    argv = accelsim.prepare(tree, config, trace, run_dir, POWER_OPTIONS)
    env = layout.with_library_dir(dict(os.environ), layout.lib_dir_of(tree))
    done = subprocess.run(argv, cwd=run_dir, env=env, capture_output=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:]
    return PowerReportReader().feed((run_dir / REPORT_NAME).read_bytes())


def test_power_per_kernel_as_accelwattch_reports_it_with_the_cycles_of_a_run_without(tmp_path):
    env = plain_env(tmp_path / "home")
    data = tmp_path / "data"
    installed = install_into(data, env)
    assert installed.returncode == 0, installed.stderr
    serve = installed_serve(tmp_path, env)
    asyncio.run(serve.start())
    try:
        base, token = serve.url, (data / "token").read_text().strip()
        client_env = {**env, "CASCADE_URL": base, "CASCADE_TOKEN": token}
        cli = [sys.executable, "-m", "cascade_tui.cli"]

        def ready() -> bool:
            return {t["id"]: t["state"] for t in get(base, "/api/traces", token)}.get(DEMO) == "ready"

        wait_for(ready, 180, "the demo trace ready", serve.log)
        configs = {c["name"]: c["power_model"] for c in get(base, "/api/gpu-configs", token)}
        assert configs["SM7_QV100"] and not configs["SM75_RTX2060"]
        listed = subprocess.run([*cli, "configs"], env=client_env, capture_output=True, text=True, timeout=60)
        power_column = {line.split()[0]: line.split()[-1] for line in listed.stdout.splitlines()[1:]}
        assert power_column["SM7_QV100"] == "AccelWattch" and power_column["SM75_RTX2060"] == "-"
        refused = subprocess.run(
            [*cli, "run", "start", "--trace", "tinyformer-step-sm75", "--config", "SM75_RTX2060", "--power"],
            env=client_env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (refused.returncode, refused.stdout) == (3, "")
        assert refused.stderr == (
            "cascade run start: --power: SM75_RTX2060 has no AccelWattch power model, so the run would "
            "have no power; configs of its arch with one: SM75_RTX2060_S (`cascade configs` lists them)\n"
        )

        started = subprocess.run(
            [*cli, "run", "start", "--trace", DEMO, "--config", "SM7_QV100", "--power", "--wait"],
            env=client_env,
            capture_output=True,
            text=True,
            timeout=800,
        )
        assert started.returncode == 0, started.stderr
        assert "power: AccelWattch on" in started.stderr
        run_id = started.stdout.split()[0]
        results = get(base, f"/api/runs/{run_id}/results", token)
        tree = Path(get(base, "/api/launcher", token)["simulator"]["path"])
    finally:
        asyncio.run(serve.stop())

    [sim] = results["sims"]
    kernels = sim["kernels"]
    assert sim["sim"]["power"] is True and sim["sim"]["state"] == "succeeded"
    assert [(k["gpu_sim_cycle"], k["gpu_sim_insn"]) for k in kernels] == real_kernel_stats("SM7_QV100")
    for k in kernels:
        assert (
            10 < k["power"]["avg_w"] < 1000
            and k["power"]["min_w"] <= k["power"]["avg_w"] <= k["power"]["max_w"]
        )
        assert sum(k["power"]["components"].values()) == pytest.approx(k["power"]["avg_w"], rel=1e-3)
        assert k["energy_j"] == pytest.approx(k["power"]["avg_w"] * k["sim_time_ns"] * 1e-9)
    direct = direct_power(tree, "SM7_QV100", tmp_path / "direct")
    assert [b.uid for b in direct] == list(range(1, DIRECT_KERNELS + 1))
    for block, k in zip(direct, kernels):
        assert (k["power"]["avg_w"], k["power"]["max_w"], k["power"]["min_w"]) == (
            block.avg_w,
            block.max_w,
            block.min_w,
        )
        assert k["power"]["components"] == {n: w for n, w in block.components.items() if w}
    print(json.dumps([k["power"]["avg_w"] for k in kernels]))
