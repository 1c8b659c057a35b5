"""The real Accel-Sim build the `accelsim` tests use: built once by .ci/run with `cascade
simulator install --prefix $CASCADE_TEST_ACCELSIM_PREFIX` from the pinned tarballs in
../shared/accelsim-src/ (beside the checkout), found here and never built by a test."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cascade_core import simulator_layout as layout
from cascade_worker.simulator import deps, sources
from cascade_worker.simulator.install import build_key
from tests.helpers import ServeProcess

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SOURCES = SHARED / "accelsim-src"
FRAMEWORK_TARBALL = SOURCES / sources.FRAMEWORK.filename
GPGPU_SIM_TARBALL = SOURCES / sources.GPGPU_SIM.filename
SAMPLES_REAL = SHARED / "samples-real"
# Accel-Sim's own config files for GPUs the pinned commits ship none of (`--configs`: offline).
EXTRA_CONFIGS = SHARED / "accelsim-configs"
PUBLIC_TRACES = SHARED / "traces-public"
PREFIX_VARIABLE = "CASCADE_TEST_ACCELSIM_PREFIX"
# Read when the tests are collected: the autouse clean_env fixture removes CASCADE_* variables.
PREFIX = os.environ.get(PREFIX_VARIABLE)
HOW = (
    f"run `cascade simulator install --prefix DIR --framework {FRAMEWORK_TARBALL} --gpgpu-sim "
    f"{GPGPU_SIM_TARBALL}` and set {PREFIX_VARIABLE}=DIR (.ci/run does)"
)


def source_tarballs() -> tuple[Path, Path]:
    if not (FRAMEWORK_TARBALL.is_file() and GPGPU_SIM_TARBALL.is_file()):
        pytest.skip(f"no pinned Accel-Sim tarballs in {SOURCES} for `cascade simulator install`")
    return FRAMEWORK_TARBALL, GPGPU_SIM_TARBALL


def extra_configs_dir() -> Path:
    """The folder `cascade simulator install --configs` reads offline; skips without it."""
    if not (EXTRA_CONFIGS / "SM80_A100" / "gpgpusim.config").is_file():
        pytest.skip(f"no Accel-Sim config files in {EXTRA_CONFIGS} for `cascade simulator install --configs`")
    return EXTRA_CONFIGS


def require_build_packages() -> None:
    if missing := deps.missing():
        pytest.skip(f"build packages missing for `cascade simulator install`: {deps.apt_line(missing)}")


def finished_prefix() -> Path:
    """The prefix holding a finished build of the pinned tarballs; skips with how to make one."""
    value = PREFIX
    if not value:
        pytest.skip(f"no real Accel-Sim build for this test: {HOW}")
    framework, gpgpu_sim = source_tarballs()
    key = build_key(
        sources.resolve(sources.FRAMEWORK, framework), sources.resolve(sources.GPGPU_SIM, gpgpu_sim)
    )
    if not layout.is_complete(layout.InstallRoot(Path(value)).build(key)):
        pytest.skip(f"{value} has no finished build of the pinned sources: {HOW}")
    return Path(value)


def cascade(*args: str | Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cascade_tui.cli", *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def install_into(
    data_dir: Path, env: dict[str, str], prefix: Path | None = None
) -> subprocess.CompletedProcess:
    """`cascade simulator install` for `data_dir`, reusing the finished build in `prefix` (default:
    the CI build's prefix, which then gains the configs it lacks, as the next .ci/run adds them)."""
    framework, gpgpu_sim = source_tarballs()
    return cascade(
        "simulator",
        "install",
        "--data-dir",
        data_dir,
        "--prefix",
        prefix or finished_prefix(),
        "--framework",
        framework,
        "--gpgpu-sim",
        gpgpu_sim,
        "--configs",
        extra_configs_dir(),
        env=env,
    )


def copied_prefix(into: Path, *, as_before_added_configs: bool = False) -> Path:
    """A copy of the CI build's prefix (its finished build, ~100 MB): a test that changes a build
    (adds a config to it) works on its own copy, never on the build other checkouts share.
    `as_before_added_configs`: without the configs an install added to it (.ci/run installs with
    --configs), as a build made before Cascade added any is."""
    source = finished_prefix()
    for build in (source / "builds").iterdir():
        if layout.is_complete(build):
            copy = into / "builds" / build.name
            shutil.copytree(build, copy, symlinks=True)
            if as_before_added_configs:
                _drop_added_configs(copy)
    return into


def _drop_added_configs(build: Path) -> None:
    manifest = layout.read_manifest(build)
    assert manifest is not None
    for name in manifest.extra.pop("added_configs", []):
        for folder in (build / "accel-sim" / "gpu-simulator").glob(f"**/configs/tested-cfgs/{name}"):
            shutil.rmtree(folder)
    (build / layout.MANIFEST).write_text(manifest.to_json())


def installed_serve(tmp: Path, env: dict[str, str]) -> ServeProcess:
    """`cascade serve` (not started) of the simulator `install_into(tmp/"data", env)` installed,
    in the user's environment `env`, with its default launcher (local) and a quick trace scan."""
    return ServeProcess(
        tmp / "data",
        env={"CASCADE_LAUNCHER": "local", "CASCADE_SCAN_INTERVAL_S": "0.5"},
        environ=env,
        log=tmp / "serve.log",
    )


def plain_env(home: Path) -> dict[str, str]:
    """A shell's environment with nothing of Cascade's, and no LD_LIBRARY_PATH: what a user has."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CASCADE_") and k != "LD_LIBRARY_PATH"}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "config"), XDG_DATA_HOME=str(home / "data"))
    return env


_STAT = re.compile(r"^(gpu_sim_cycle|gpu_sim_insn) = (\d+)\s*$", re.MULTILINE)


def real_kernel_stats(config: str) -> list[tuple[int, int]]:
    """(gpu_sim_cycle, gpu_sim_insn) per kernel, in order, from samples-real/runs/<config>/run.log."""
    text = (SAMPLES_REAL / "runs" / config / "run.log").read_text(errors="replace")
    values = _STAT.findall(text)
    cycles = [int(v) for k, v in values if k == "gpu_sim_cycle"]
    insns = [int(v) for k, v in values if k == "gpu_sim_insn"]
    return list(zip(cycles, insns, strict=True))


def other_cuda_in_ld_so_conf() -> bool:
    """Whether the loader's cache has a libcudart that is not the simulator's (the case that
    kills it with status 127 without LD_LIBRARY_PATH)."""
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    try:
        out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=30).stdout
    except OSError:
        return False
    return "libcudart.so " in out or "libcudart.so\n" in out or "libcudart.so (" in out
