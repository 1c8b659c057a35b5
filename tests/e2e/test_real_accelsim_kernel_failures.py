"""Issue 30 with the real simulator on real PyTorch kernels: `../shared/traces-public/torch3-k5-13-sm70`
holds kernels 5-13 of a training step traced on a V100, two of which (`at::native::reduce_kernel`,
kernel-7 and kernel-12, positions 2 and 7 of its list) make the pinned Accel-Sim abort. Uploaded
with `cascade upload` and run with `cascade run start --wait` as a user would, on SM7_QV100: the
two reduce kernels are failed rows with the assertion's text, every other kernel has results, and
each simulator's kernels equal a direct `accel-sim.out` run of the same kernel list. With
`on_kernel_failure: "stop"` the sim fails at the first one, as before."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from cascade_core import simulator_layout as layout
from cascade_worker import accelsim
from cascade_worker.environment import simulator_environment
from cascade_worker.kernel_list import TraceList
from tests.accelsim_build import SHARED, finished_prefix, install_into, installed_serve, plain_env
from tests.e2e.test_real_accelsim import get, post, wait_for

pytestmark = [pytest.mark.accelsim, pytest.mark.timeout(900)]

TRACE = "torch3-k5-13-sm70"
SOURCE = SHARED / "traces-public" / TRACE
CONFIG = "SM7_QV100"
ASSERTION = "shader.cc:3812: void barrier_set_t::deallocate_barrier(unsigned int): Assertion `active.any() == false' failed."
FAILED = {2, 7}  # positions (0-based) of kernel-7 and kernel-12 among the list's 9 kernels
_CYCLE = re.compile(r"^gpu_sim_cycle = (\d+)\s*$", re.MULTILINE)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    if not SOURCE.is_dir():
        pytest.skip(f"no {SOURCE}")
    tmp = tmp_path_factory.mktemp("kernel-failures")
    env = plain_env(tmp / "home")
    installed = install_into(tmp / "data", env)
    assert installed.returncode == 0, installed.stderr
    serve = installed_serve(tmp, env)
    asyncio.run(serve.start())
    try:
        base, token = serve.url, (tmp / "data" / "token").read_text().strip()
        # the data directory tells `cascade upload` where the embedded S3 endpoint is
        client_env = {
            **env,
            "CASCADE_URL": base,
            "CASCADE_TOKEN": token,
            "CASCADE_DATA_DIR": str(tmp / "data"),
        }
        cli = [sys.executable, "-m", "cascade_tui.cli"]
        uploaded = subprocess.run(
            [*cli, "upload", str(SOURCE), "--trace-id", TRACE, "--arch", "sm_70"],
            env=client_env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert uploaded.returncode == 0, uploaded.stderr
        wait_for(
            lambda: {t["id"]: t["state"] for t in get(base, "/api/traces", token)}.get(TRACE) == "ready",
            120,
            "the trace ready",
            serve.log,
        )
        stop = post(
            base,
            "/api/runs",
            token,
            {"trace_id": TRACE, "entries": [{"gpu_config": CONFIG, "count": 1, "on_kernel_failure": "stop"}]},
        )
        started = subprocess.run(
            [*cli, "run", "start", "--trace", TRACE, "--config", CONFIG, "--wait"],
            env=client_env,
            capture_output=True,
            text=True,
            timeout=800,
        )
        assert started.returncode == 0, f"{started.stdout}\n{started.stderr}\n{serve.log.read_text()[-3000:]}"
        run_id = started.stdout.strip().splitlines()[0]
        wait_for(
            lambda: get(base, f"/api/runs/{stop['id']}", token)["state"] != "active", 300, "stop", serve.log
        )
        results = subprocess.run(
            [*cli, "results", run_id, "--kernels"], env=client_env, capture_output=True, text=True, timeout=60
        )
        yield {
            "base": base,
            "token": token,
            "run": run_id,
            "stop": stop["id"],
            "data": tmp / "data",
            "results": results.stdout,
        }
    finally:
        asyncio.run(serve.stop())


def test_the_reduce_kernels_fail_with_the_assertion_and_every_other_kernel_has_results(served):
    base, token = served["base"], served["token"]
    run = get(base, f"/api/runs/{served['run']}", token)
    assert run["state"] == "succeeded" and run["replay"] is False, run
    sim = run["sims"][0]
    assert (sim["kernels_done"], sim["kernels_failed"], sim["kernels_total"]) == (9, 2, 9)
    assert sim["error"] == (
        "2 of 9 kernels failed in the simulator: #2 (assertion failed: active.any() == false), "
        "#7 (assertion failed: active.any() == false)"
    )
    kernels = get(base, f"/api/sims/{sim['id']}/results", token)["kernels"]
    assert [k["kernel_index"] for k in kernels] == list(range(9))
    for k in kernels:
        if k["kernel_index"] in FAILED:
            assert k["failed"] == ASSERTION and k["gpu_sim_cycle"] is None
            assert k["kernel_name"].startswith("_ZN2at6native13reduce_kernel")
        else:
            assert "failed" not in k and k["gpu_sim_cycle"] > 0, k["kernel_index"]
    assert ASSERTION in served["results"] and "failed in the simulator" in served["results"]


def test_each_simulators_kernels_equal_a_direct_run_of_its_kernel_list(served, tmp_path: Path):
    """The sim ran three simulators: kernels 0-8, then (warm-up 1) 3-8, then (warm-up 6) 8."""
    base, token = served["base"], served["token"]
    sim = get(base, f"/api/runs/{served['run']}", token)["sims"][0]
    got = {
        k["kernel_index"]: k["gpu_sim_cycle"]
        for k in get(base, f"/api/sims/{sim['id']}/results", token)["kernels"]
    }
    log = (
        urllib.request.urlopen(
            urllib.request.Request(
                f"{base}/api/sims/{sim['id']}/log", headers={"Authorization": f"Bearer {token}"}
            )
        )
        .read()
        .decode()
    )
    assert [line for line in log.splitlines() if line.startswith("[cascade] restart")] == [
        "[cascade] restart 1: kernels #3-8 of the trace, after 1 warm-up kernel (#1)",
        "[cascade] restart 2: kernel #8 of the trace, after 1 warm-up kernel (#6)",
    ]
    trace_dir = served["data"] / "traces" / TRACE
    accelsim_dir = layout.accelsim_dir(
        next(b for b in (finished_prefix() / "builds").iterdir() if layout.is_complete(b))
    )
    segments = [([], range(0, 9)), ([1], range(3, 9)), ([6], range(8, 9))]
    direct: dict[int, int] = {}
    for n, (warmup, owned) in enumerate(segments):
        run_dir = tmp_path / f"run-{n}"
        argv = accelsim.prepare(accelsim_dir, CONFIG, trace_dir, run_dir)
        argv[argv.index("-trace") + 1] = str(
            TraceList(accelsim.kernelslist(trace_dir)).write(
                [*warmup, *owned], tmp_path / "lists", f"list-{n}.g"
            )
        )
        done = subprocess.run(
            argv,
            cwd=run_dir,
            capture_output=True,
            text=True,
            timeout=600,
            env=simulator_environment(plain_env(tmp_path / "home"), layout.lib_dir_of(accelsim_dir)),
        )
        cycles = [int(c) for c in _CYCLE.findall(done.stdout)][len(warmup) :]
        direct.update(zip(owned, cycles))  # up to the kernel it aborted on
    assert {i: c for i, c in got.items() if c is not None} == direct
    assert set(range(9)) - set(direct) == FAILED


def test_stop_fails_the_sim_at_the_first_failed_kernel_as_before(served):
    base, token = served["base"], served["token"]
    run = get(base, f"/api/runs/{served['stop']}", token)
    sim = run["sims"][0]
    assert run["state"] == "failed" and sim["state"] == "failed"
    assert sim["error"] == "assertion failed: active.any() == false" and sim["kernels_done"] == 2
    kernels = get(base, f"/api/sims/{sim['id']}/results", token)["kernels"]
    assert [k["kernel_index"] for k in kernels] == [0, 1] and all("failed" not in k for k in kernels)
