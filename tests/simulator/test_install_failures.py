"""`cascade simulator install` as a user runs it, when it cannot finish: a missing build package,
a corrupt source tarball, a full disk during the build, Ctrl+C mid-build. Each ends in a clear
message, and none leaves a build the server would use: no `simulator/current`, no build folder,
no staging folder, no compiler still running."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cascade_core import simulator_layout as layout
from cascade_worker.simulator import deps, sources
from tests.accelsim_build import (
    PREFIX,
    cascade,
    extra_configs_dir,
    plain_env,
    require_build_packages,
    source_tarballs,
)
from tests.helpers import small_tmpfs

# Each test runs the real installer (some a real build of a minute or more): not the fast lane.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def assert_nothing_installed(data: Path, prefix: Path, env: dict[str, str]) -> None:
    assert not layout.current_link(data).exists()
    assert not any((prefix / "builds").glob("*")) if (prefix / "builds").exists() else True
    assert not any((prefix / "staging").glob("*")) if (prefix / "staging").exists() else True
    status = cascade("simulator", "status", "--data-dir", data, env=env)
    assert status.returncode == 0 and status.stdout.startswith("simulator: the stand-in"), status.stdout


@pytest.fixture
def cuda_wheels(tmp_path_factory) -> Path:
    """The three CUDA wheels: the CI build's (its prefix keeps them), else downloaded once."""
    if PREFIX and (Path(PREFIX) / "wheels").is_dir():
        return Path(PREFIX) / "wheels"
    from cascade_worker.simulator import cuda_wheels as wheels

    folder = tmp_path_factory.getbasetemp() / "cuda-wheels"
    try:
        wheels.reuse_or_download(folder, None)
    except wheels.WheelError as exc:
        pytest.skip(f"no CUDA wheels for `cascade simulator install`: {exc}")
    return folder


def install_args(data: Path, prefix: Path, framework: Path, gpgpu_sim: Path, *extra: str | Path) -> list:
    return [
        "simulator",
        "install",
        "--data-dir",
        data,
        "--prefix",
        prefix,
        "--framework",
        framework,
        "--gpgpu-sim",
        gpgpu_sim,
        "--configs",
        extra_configs_dir(),
        *extra,
    ]


def test_a_missing_build_package_prints_the_apt_line(tmp_path: Path) -> None:
    framework, gpgpu_sim = source_tarballs()
    tools = tmp_path / "bin"  # every tool of the recipe but bison
    tools.mkdir()
    for requirement in deps.REQUIREMENTS:
        found = shutil.which(requirement.what)
        if not requirement.header and requirement.what != "bison" and found:
            (tools / requirement.what).symlink_to(found)
    env = {**plain_env(tmp_path / "home"), "PATH": str(tools)}
    data, prefix = tmp_path / "data", tmp_path / "prefix"
    result = cascade(*install_args(data, prefix, framework, gpgpu_sim), env=env)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == "cascade simulator install: missing build packages: bison (bison)"
    assert "  install them with: apt-get install -y bison" in lines
    assert "Traceback" not in result.stderr
    assert_nothing_installed(data, prefix, plain_env(tmp_path / "home"))


def test_a_corrupt_pinned_tarball_is_refused_before_building(tmp_path: Path) -> None:
    framework, gpgpu_sim = source_tarballs()
    corrupt = tmp_path / framework.name  # named as the pinned commit, one byte changed
    data = bytearray(framework.read_bytes())
    data[len(data) // 2] ^= 0xFF
    corrupt.write_bytes(data)
    env = plain_env(tmp_path / "home")
    result = cascade(*install_args(tmp_path / "data", tmp_path / "prefix", corrupt, gpgpu_sim), env=env)
    assert result.returncode == 1
    assert result.stderr.startswith(f"cascade simulator install: {corrupt} is corrupt: its sha256 is ")
    assert (
        f"but accel-sim/accel-sim-framework at 73f9fac6 is {sources.FRAMEWORK.sha256}; fetch it again"
        in result.stderr
    )
    assert_nothing_installed(tmp_path / "data", tmp_path / "prefix", env)


def test_an_unreadable_tarball_says_so_and_leaves_nothing(tmp_path: Path) -> None:
    require_build_packages()
    framework, gpgpu_sim = source_tarballs()
    truncated = tmp_path / "my-gpgpu-sim.tar.gz"  # not the pinned name: no sha256 to compare
    truncated.write_bytes(gpgpu_sim.read_bytes()[:300_000])
    env = plain_env(tmp_path / "home")
    result = cascade(*install_args(tmp_path / "data", tmp_path / "prefix", framework, truncated), env=env)
    assert result.returncode == 1
    assert f"{truncated} is not a readable .tar.gz" in result.stderr
    assert "the file is corrupt or not a source tarball: fetch it again" in result.stderr
    assert "Traceback" not in result.stderr
    assert_nothing_installed(tmp_path / "data", tmp_path / "prefix", env)


def test_a_full_disk_during_the_build_says_so_and_leaves_nothing(tmp_path: Path, cuda_wheels: Path) -> None:
    require_build_packages()
    framework, gpgpu_sim = source_tarballs()
    prefix = tmp_path / "small-disk"
    prefix.mkdir()
    env = plain_env(tmp_path / "home")
    # Sources and CUDA headers take ~41 MB: the compiler fills the rest within a minute.
    with small_tmpfs(prefix, "size=56m"):
        result = cascade(
            *install_args(tmp_path / "data", prefix, framework, gpgpu_sim, "--cuda-wheels", cuda_wheels),
            env=env,
        )
        assert result.returncode == 1, result.stdout + result.stderr
        assert f"the disk holding {prefix} is full" in result.stderr, result.stderr
        assert "Nothing was installed" in result.stderr
        assert "Traceback" not in result.stderr
        assert_nothing_installed(tmp_path / "data", prefix, env)


def test_ctrl_c_mid_build_stops_every_compiler_and_leaves_nothing(tmp_path: Path, cuda_wheels: Path) -> None:
    require_build_packages()
    framework, gpgpu_sim = source_tarballs()
    prefix = tmp_path / "prefix"
    env = plain_env(tmp_path / "home")
    argv = [
        sys.executable,
        "-m",
        "cascade_tui.cli",
        *map(
            str, install_args(tmp_path / "data", prefix, framework, gpgpu_sim, "--cuda-wheels", cuda_wheels)
        ),
    ]
    proc = subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as in a terminal: a suite started in the background (`.ci/run &`) ignores SIGINT, and
        # Python then never turns it into KeyboardInterrupt
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stdout is not None
    for line in proc.stdout:  # not a terminal: `progress:` lines
        if line.startswith("progress: "):
            break
    time.sleep(2)  # a few compilers running
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert err.strip().endswith(
        "interrupted; the partial build was removed and nothing was installed "
        "(the server keeps the simulator it had)"
    ), err
    assert "Traceback" not in err
    assert_nothing_installed(tmp_path / "data", prefix, env)
    assert not [pid for pid in _pids_working_under(prefix)], "a compiler outlived the install"


def _pids_working_under(folder: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "cwd").startswith(str(folder)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_bad_input_gets_one_clear_line(tmp_path: Path) -> None:
    env = plain_env(tmp_path / "home")
    a_file = tmp_path / "file"
    a_file.write_text("")
    cases = {
        ("simulator",): (2, "cascade simulator: say install or status (--help for usage)"),
        ("simulator", "install", "--jobs", "0"): (
            2,
            "cascade simulator install: --jobs must be 1 or more (got 0)",
        ),
        ("simulator", "install", "--framework", "/nonexistent/fw.tar.gz", "--data-dir", tmp_path / "d"): (
            1,
            "cascade simulator install: /nonexistent/fw.tar.gz: no such file or directory (give a .tar.gz of "
            "accel-sim/accel-sim-framework or a checkout)",
        ),
        ("simulator", "install", "--data-dir", a_file / "data", "--prefix", a_file / "prefix"): (
            1,
            f"cascade simulator install: cannot create {a_file / 'prefix'}: Not a directory",
        ),
    }
    for args, (code, line) in cases.items():
        result = cascade(*args, env=env)
        assert (result.returncode, result.stderr.strip().splitlines()[-1]) == (code, line), args
        assert "Traceback" not in result.stderr


def test_status_json_is_what_the_api_reports(tmp_path: Path) -> None:
    result = cascade(
        "simulator", "status", "--json", "--data-dir", tmp_path / "data", env=plain_env(tmp_path)
    )
    assert result.returncode == 0
    assert '"kind": "stand-in"' in result.stdout and "cascade simulator install" in result.stdout
