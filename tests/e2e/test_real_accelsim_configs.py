"""Issue 31 with the real simulator, as a user runs it: `cascade simulator install` on an existing
build (a copy of the CI build: the shared one is never changed by a test) adds SM80_A100 without
a rebuild; `cascade serve`, `cascade upload` of the real A100 trace (../shared/traces-public/
flashinfer-gemm-sm80) and `cascade run start` give every kernel the cycles a direct `accel-sim.out`
run of the same trace on Accel-Sim's own A100 files gives; `cascade configs add` adds a config the
simulator takes (a sim runs on it) and refuses one it does not, in its words; an sm_90 trace gets
the straight answer. Two real sims of about 30 s each, at once."""

from __future__ import annotations

import asyncio
import lzma
import re
import shutil
import urllib.request
from pathlib import Path

import pytest

from cascade_core import simulator_layout as layout
from cascade_server.appkeys import RUNS_KEY
from tests.accelsim_build import (
    EXTRA_CONFIGS,
    PUBLIC_TRACES,
    cascade,
    copied_prefix,
    install_into,
    installed_serve,
    plain_env,
)
from tests.e2e.test_real_accelsim import get, post, wait_for

pytestmark = [pytest.mark.accelsim, pytest.mark.timeout(900)]

TRACE = "flashinfer-gemm-sm80"
# gpu_sim_cycle per kernel of a direct run: accel-sim.out -trace .../kernelslist.g -config
# gpgpusim.config -config trace.config, with ../shared/accelsim-configs/SM80_A100 (issue 31).
DIRECT_RUN_CYCLES = [6341, 6341, 5854, 5845, 5303, 5331, 6349, 5304]
PINNED_ARCHS = ["sm_35", "sm_60", "sm_61", "sm_70", "sm_75", "sm_80", "sm_86"]


def h100_trace(folder: Path) -> Path:
    """One kernel of the A100 trace, its header saying binary version 90: what an H100 trace is
    to the pinned simulator (it stops at `unsupported binary version: 90`)."""
    text = lzma.decompress((PUBLIC_TRACES / TRACE / "traces" / "kernel-5.traceg.xz").read_bytes()).decode()
    traces = folder / "traces"
    traces.mkdir(parents=True)
    (traces / "kernel-1.traceg").write_text(text.replace("-binary version = 80", "-binary version = 90"))
    (traces / "kernelslist.g").write_text("kernel-1.traceg\n")
    return folder


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    if not (PUBLIC_TRACES / TRACE / "traces" / "kernelslist.g").is_file():
        pytest.skip(f"no public A100 trace in {PUBLIC_TRACES}")
    tmp = tmp_path_factory.mktemp("configs")
    env = plain_env(tmp / "home")
    prefix = copied_prefix(tmp / "prefix", as_before_added_configs=True)
    data = tmp / "data"
    installed = install_into(data, env, prefix=prefix)
    assert installed.returncode == 0, installed.stderr
    # an existing install gains the config without a rebuild
    assert "added GPU config SM80_A100" in installed.stdout and "compiling" not in installed.stdout
    again = install_into(data, env, prefix=prefix)
    assert again.returncode == 0 and "SM80_A100" not in again.stdout, again.stdout
    build = layout.installed_build(data)
    assert build is not None and layout.read_manifest(build).extra == {"added_configs": ["SM80_A100"]}

    serve = installed_serve(tmp, env)
    asyncio.run(serve.start())
    log = serve.log
    try:
        base, token = serve.url, (data / "token").read_text().strip()
        upload_env = {**serve.env, "CASCADE_DATA_DIR": str(data)}  # the embedded S3 endpoint's
        uploaded = [
            cascade("upload", PUBLIC_TRACES / TRACE, "--trace-id", TRACE, env=upload_env),
            cascade("upload", h100_trace(tmp / "h100"), "--trace-id", "h100-one-kernel", env=upload_env),
        ]
        assert all(u.returncode == 0 for u in uploaded), [u.stderr for u in uploaded]

        def both_ready():
            states = {t["id"]: t["state"] for t in get(base, "/api/traces", token)}
            return states.get(TRACE) == "ready" and states.get("h100-one-kernel") == "ready"

        wait_for(both_ready, 120, "the traces ready", log)
        client_env = {**env, "CASCADE_URL": base, "CASCADE_TOKEN": token}
        lab = tmp / "LAB_A100"  # Accel-Sim's A100 with half its SMs, and a file that is no config's
        shutil.copytree(EXTRA_CONFIGS / "SM80_A100", lab)
        lab.chmod(0o755)
        (lab / "gpgpusim.config").chmod(0o644)
        text = (lab / "gpgpusim.config").read_text().replace("-gpgpu_n_clusters 108", "-gpgpu_n_clusters 54")
        (lab / "gpgpusim.config").write_text(text)
        (lab / "NOTES.md").write_text("halved\n")
        # the A100 trace on the installed config (no --config: the only sm_80 config until
        # LAB_A100 is added), and while it runs, the config added and a sim on it
        started = cascade("run", "start", "--trace", TRACE, env=client_env)
        added = cascade("configs", "add", lab, env=client_env)
        yield {
            "base": base,
            "token": token,
            "env": client_env,
            "log": log,
            "added": added,
            "started": started,
            "tmp": tmp,
            "build": build,
        }
    finally:
        asyncio.run(serve.stop())


def finished(served, run_id: str) -> dict:
    return wait_for(
        lambda: (
            (run := get(served["base"], f"/api/runs/{run_id}", served["token"]))["state"] != "active" and run
        ),
        600,
        f"run {run_id}",
        served["log"],
    )


def cycles(served, run_id: str) -> list[int]:
    kernels = get(served["base"], f"/api/runs/{run_id}/kernels", served["token"])
    return [k["gpu_sim_cycle"] for k in sorted(kernels, key=lambda k: k["kernel_index"])]


def test_the_a100_trace_runs_on_sm80_a100_as_a_direct_run_does(served):
    configs = {c["name"]: c for c in get(served["base"], "/api/gpu-configs", served["token"])}
    assert configs["SM80_A100"] == {
        "name": "SM80_A100",
        "arch": "sm_80",
        "core_clock_mhz": 1410.0,
        "added": False,
        "power_model": False,  # Accel-Sim's A100 config has no AccelWattch model
    }
    started = served["started"]
    assert started.returncode == 0, started.stderr
    assert "config: SM80_A100 (the only sm_80 config; --config to choose)" in started.stderr
    run_id = started.stdout.strip()
    run = finished(served, run_id)
    assert run["state"] == "succeeded" and run["replay"] is False, run
    assert cycles(served, run_id) == DIRECT_RUN_CYCLES


def test_a_config_added_with_cascade_configs_add_runs_a_sim(served):
    added = served["added"]
    assert added.returncode == 0, added.stderr
    assert (
        added.stdout.strip()
        == "added GPU config LAB_A100: sm_80, 1410 MHz (2 files); runs on sm_80 traces can use it"
    )
    assert "left out (not config files): NOTES.md" in added.stderr
    listed = cascade("configs", "--arch", "sm_80", env=served["env"])
    assert re.search(r"^LAB_A100\s+sm_80\s+1410 MHz\s+added$", listed.stdout, re.M), listed.stdout
    body = {"trace_id": TRACE, "entries": [{"gpu_config": "LAB_A100", "count": 1}]}
    run = post(served["base"], "/api/runs", served["token"], body)
    done = finished(served, run["id"])
    assert done["state"] == "succeeded", done
    request = urllib.request.Request(
        f"{served['base']}/api/sims/{done['sims'][0]['id']}/log",
        headers={"Authorization": f"Bearer {served['token']}"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        sim_log = response.read().decode(errors="replace")
    assert re.search(r"^-gpgpu_n_clusters\s+54\b", sim_log, re.M), "the sim did not run the added config"
    assert len(cycles(served, run["id"])) == len(DIRECT_RUN_CYCLES)


def test_a_config_with_an_option_the_simulator_does_not_know_is_refused_in_its_words(served):
    bad = served["tmp"] / "BAD_A100"
    bad.mkdir()
    for name in ("gpgpusim.config", "trace.config"):
        shutil.copy(EXTRA_CONFIGS / "SM80_A100" / name, bad / name)
        (bad / name).chmod(0o644)
    with open(bad / "gpgpusim.config", "a") as out:
        out.write("-gpgpu_no_such_option 1\n")
    refused = cascade("configs", "add", bad, env=served["env"])
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert refused.stderr.strip() == (
        "cascade configs add: 422: config BAD_A100: the installed simulator refuses it: "
        "GPGPU-Sim ** ERROR: Unknown Option: '-gpgpu_no_such_option' (exit status 1)"
    )
    assert "BAD_A100" not in cascade("configs", env=served["env"]).stdout


def test_an_h100_trace_gets_the_straight_answer(served):
    simulator = get(served["base"], "/api/launcher", served["token"])["simulator"]
    assert simulator["archs"] == PINNED_ARCHS  # read from the installed build's own sources
    refused = cascade("run", "start", "--trace", "h100-one-kernel", env=served["env"])
    assert refused.returncode == 3
    assert refused.stderr.startswith(
        "cascade run start: trace h100-one-kernel is sm_90 (Hopper: H100, H200, GH200), which the installed "
        "Accel-Sim cannot simulate"
    )
    assert "cascade simulator install --framework PATH --gpgpu-sim PATH" in refused.stderr


async def test_a_newer_accel_sim_brings_its_own_configs_and_opcodes(served, make_server, tmp_path):
    """What a newer checkout brings, on the existing build (no second 5-minute build): the tree
    the server reads is the build's, with a Hopper opcode header and dispatch and an SM90_H100
    tested config added, as a newer accel-sim-framework and gpgpu-sim_distribution have them."""
    accelsim = layout.accelsim_dir(served["build"])
    newer = tmp_path / "newer-accel-sim"
    shutil.copytree(accelsim, newer, symlinks=True, ignore=shutil.ignore_patterns("lib", "bin"))
    for part in ("gpu-simulator/bin", "gpu-simulator/gpgpu-sim/lib"):  # the build's binary, unchanged
        (newer / part).symlink_to(accelsim / part)
    (newer / "gpu-simulator/ISA_Def/hopper_opcode.h").write_text("#define HOPPER_H100_BINART_VERSION 90\n")
    dispatch = newer / "gpu-simulator/trace-driven/trace_driven.cc"
    dispatch.write_text(
        dispatch.read_text().replace(
            "else if (kernel_trace_info->binary_verion == TURING_BINART_VERSION)",
            "else if (kernel_trace_info->binary_verion == HOPPER_H100_BINART_VERSION)\n"
            "    OpcodeMap = &Hopper_OpcodeMap;\n"
            "  else if (kernel_trace_info->binary_verion == TURING_BINART_VERSION)",
        )
    )
    h100 = newer / layout.TESTED_CFGS / "SM90_H100"
    h100.mkdir()
    text = (EXTRA_CONFIGS / "SM80_A100" / "gpgpusim.config").read_text()
    (h100 / "gpgpusim.config").write_text(text.replace("capability_major 8", "capability_major 9"))
    server = await make_server(accelsim_dir=newer)
    async with server.client() as http:
        configs = {c["name"]: c["arch"] for c in (await http.get("/api/gpu-configs")).json()}
        assert configs["SM90_H100"] == "sm_90" and configs["SM80_A100"] == "sm_80"
        assert (await http.get("/api/launcher")).json()["simulator"]["archs"] == [*PINNED_ARCHS, "sm_90"]
    assert server.app[RUNS_KEY].simulator.arch_problem("sm_90") is None
    assert server.app[RUNS_KEY].simulator.arch_problem("sm_89") is not None
