"""Issue 32, item 1, end to end: a real server and real workers run a fake `accel-sim.out` that
takes memory, CPU time or disk the way an option can make the real one do (`-gpgpu_n_clusters 400`
took 1.44 GB); each sim stops at its limit, fails saying which limit (its value and setting), and
a limit is never taken for a kernel the simulator failed on. The limits are server settings the
workers get, as an operator sets them. (The real simulator: test_real_accelsim_limits.py.)"""

from __future__ import annotations

import pytest

from tests.e2e.test_kernel_failures import fake_server, start
from tests.helpers import finished_run, wait_until

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """The workers' scratch parent, to see what they leave behind."""
    parent = tmp_path / "scratch"
    monkeypatch.setenv("CASCADE_SCRATCH_DIR", str(parent))
    return parent


async def no_scratch_left(parent) -> None:
    """The workers' scratch parent, once empty: a worker cleans up after its final report."""
    await wait_until(lambda: not list(parent.iterdir()), 30, what=f"{parent} to be empty")


async def one_sim(make_server, tmp_path, config: dict[str, str], kernels: int = 6) -> tuple[dict, str]:
    server, trace_id = await fake_server(make_server, tmp_path, {"SM7_LIMITED": config}, kernels=kernels)
    async with server.client() as http:
        run = await start(http, trace_id, [{"gpu_config": "SM7_LIMITED", "count": 1}])
        sim = (await finished_run(http, run["id"], timeout=90))["sims"][0]
        log = (await http.get(f"/api/sims/{sim['id']}/log")).text
    return sim, log


async def test_a_sim_past_its_memory_limit_fails_saying_so(
    make_server, worker_env, tmp_path, monkeypatch, scratch
):
    monkeypatch.setenv("CASCADE_SIM_MEMORY_LIMIT_MB", "300")
    sim, log = await one_sim(make_server, tmp_path, {"fake_behaviour": "alloc"})
    limit = "memory limit reached: the simulator may use 300 MiB (CASCADE_SIM_MEMORY_LIMIT_MB=300)"
    assert sim["state"] == "failed" and sim["error"] == limit
    assert f"[cascade] the sim stops: {limit}" in log.splitlines()
    await no_scratch_left(scratch)  # a finished sim leaves nothing behind


async def test_memory_that_runs_out_inside_a_kernel_ends_the_sim_it_is_no_failed_kernel(
    make_server, worker_env, tmp_path, monkeypatch, scratch
):
    """Before, the abort after `std::bad_alloc` counted as the kernel's failure: the sim went on
    past it, and every later simulator could take the host's memory again."""
    monkeypatch.setenv("CASCADE_SIM_MEMORY_LIMIT_MB", "300")
    config = {"fake_fail_on": "none", "fake_alloc_on": "kernel-3.traceg"}
    sim, log = await one_sim(make_server, tmp_path, config)
    assert sim["state"] == "failed", sim
    assert sim["error"].startswith("memory limit reached: the simulator may use 300 MiB")
    assert sim["kernels_done"] == 2 and "kernels_failed" not in sim
    assert "failed in the simulator" not in log and "restart 1" not in log
    await no_scratch_left(scratch)


async def test_the_cpu_time_limit_is_the_whole_sim_s_across_its_simulators(
    make_server, worker_env, tmp_path, monkeypatch, scratch
):
    """Kernel 1 burns 1.5 s of a 2 s budget and fails; the simulator started after it gets the
    0.5 s left (1 s: rlimits count whole seconds), not 2 s again."""
    monkeypatch.setenv("CASCADE_SIM_CPU_LIMIT_S", "2")
    config = {"fake_fail_on": "kernel-1.traceg", "fake_spin_s": "1.5"}
    sim, log = await one_sim(make_server, tmp_path, config)
    assert sim["state"] == "failed", sim
    assert sim["error"].startswith(
        "CPU time limit reached: the sim's simulators may use 2 s of CPU time (CASCADE_SIM_CPU_LIMIT_S=2)"
    )
    assert sim["error"].endswith(
        "; 1 of 6 kernel failed in the simulator: #0 (assertion failed: active.any() == false)"
    )
    assert "[cascade] restart 1: kernels #1-5 of the trace" in log
    assert sim["kernels_done"] == 1 and sim["kernels_failed"] == 1  # kernel 2 never finished


async def test_a_file_past_the_file_size_limit_ends_the_sim(
    make_server, worker_env, tmp_path, monkeypatch, scratch
):
    monkeypatch.setenv("CASCADE_SIM_FILE_LIMIT_MB", "1")
    sim, _ = await one_sim(make_server, tmp_path, {"fake_behaviour": "big_file", "fake_file_mb": "5"})
    assert sim["state"] == "failed"
    assert sim["error"] == (
        "file size limit reached: the simulator may write files of up to 1 MiB (CASCADE_SIM_FILE_LIMIT_MB=1)"
    )
    await no_scratch_left(scratch)


async def test_within_its_limits_a_sim_runs_as_ever(make_server, worker_env, tmp_path, monkeypatch, scratch):
    monkeypatch.setenv("CASCADE_SIM_MEMORY_LIMIT_MB", "1000")
    sim, _ = await one_sim(make_server, tmp_path, {"fake_behaviour": "alloc", "fake_alloc_mb": "100"})
    assert sim["state"] == "succeeded" and sim["error"] is None
