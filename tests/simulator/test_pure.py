"""The installer's pure parts: make output -> progress and error lines, build packages -> the apt
line, manifests, the library path, wheel members, the smoke check, progress lines, the status text."""

from __future__ import annotations

from pathlib import Path

import pytest

from cascade_core import simulator_layout as layout
from cascade_core.models import SimulatorInfo
from cascade_tui.views.simulator import parse_progress, simulator_line, status_lines
from cascade_worker.outcome import OutputMarkers, classify
from cascade_worker.simulator import build, cuda_wheels, deps, smoke, sources
from cascade_worker.simulator.cli import status_text
from cascade_worker.simulator.install import build_key
from cascade_worker.simulator.report import parse_progress_line, progress_line
from tests.worker.fakes import build_manifest

# Lines from a real build log of the pinned commits (paths shortened).
COMPILE_O_FIRST = (
    "g++  -O3 -g3 -fPIC -DCUDART_VERSION=11080 -Wall -I/x/cuda/include -DGPGPUSIM_POWER_MODEL "
    "-o /x/build/gcc-12.2.0/cuda-11080/release/gpgpu-sim/addrdec.o -c addrdec.cc"
)
COMPILE_C_FIRST = (
    "g++ -m64 -Wno-unknown-pragmas  -O3 -fPIC -msse2 -mfpmath=sse -DNTHREADS=4 -Icacti -lz  "
    "-c cacti/bank.cc -o /x/build/gcc-12.2.0/cuda-11080/release/accelwattch/bank.o"
)
LINK = "g++ -m64 /x/release/accelwattch/Ucache.o /x/release/accelwattch/XML_Parse.o -o /x/release/libaccelwattch.so"
MAKEDEPEND = "makedepend -f./build/release/main.makedepend -p./build/release/ main.cc 2> /dev/null"
BISON = "bison --name-prefix=ptx_ -v -d ptx.y --file-prefix=/x/release/cuda-sim/ptx 2> /dev/null"


def test_compiled_object_reads_both_argument_orders_and_nothing_else() -> None:
    assert (
        build.compiled_object(COMPILE_O_FIRST) == "/x/build/gcc-12.2.0/cuda-11080/release/gpgpu-sim/addrdec.o"
    )
    assert (
        build.compiled_object(COMPILE_C_FIRST) == "/x/build/gcc-12.2.0/cuda-11080/release/accelwattch/bank.o"
    )
    for line in (LINK, MAKEDEPEND, BISON, "make[1]: Entering directory '/x'", ""):
        assert build.compiled_object(line) is None, line


def test_progress_counts_each_object_once_and_stays_under_100_until_make_ends() -> None:
    progress = build.Progress(expected=2)
    assert progress.feed(COMPILE_O_FIRST) and not progress.feed(COMPILE_O_FIRST)
    assert not progress.feed(LINK)
    assert progress.feed(COMPILE_C_FIRST)
    assert progress.feed(COMPILE_C_FIRST.replace("bank", "basic_circuit"))  # more than guessed
    assert (progress.done, progress.fraction(), progress.fraction(finished=True)) == (3, 0.99, 1.0)


def test_error_lines_are_what_the_compiler_and_make_said() -> None:
    output = [
        COMPILE_O_FIRST,
        "In file included from shader.cc:42:",
        "shader.h:12:10: fatal error: cuda_runtime_api.h: No such file or directory",
        "   12 | #include <cuda_runtime_api.h>",
        "compilation terminated.",
        "make[2]: *** [Makefile:80: /x/shader.o] Error 1",
        "make[2]: *** [Makefile:80: /x/shader.o] Error 1",
        "/x/ptx.tab.c: fatal error: error writing to /tmp/ccX.s: No space left on device",
        "warning: unused variable 'x'",
    ]
    assert build.error_lines(output) == [
        "shader.h:12:10: fatal error: cuda_runtime_api.h: No such file or directory",
        "make[2]: *** [Makefile:80: /x/shader.o] Error 1",
        "/x/ptx.tab.c: fatal error: error writing to /tmp/ccX.s: No space left on device",
    ]
    assert build.error_lines(output, limit=1) == [output[2]]


def test_missing_build_packages_make_one_apt_line() -> None:
    present = {"g++", "flex", "xmllint"}
    missing = deps.missing(
        which=lambda name: f"/usr/bin/{name}" if name in present else None, header_exists=lambda name: False
    )
    assert [r.what for r in missing] == ["make", "bison", "makedepend", "zlib.h"]
    assert deps.apt_line(missing) == "apt-get install -y build-essential bison xutils-dev zlib1g-dev"
    assert deps.describe(missing[-1:]) == "zlib.h (zlib1g-dev)"
    assert deps.missing(which=lambda name: "/bin/x", header_exists=lambda name: True) == []


def test_the_simulators_library_folder_goes_first_once() -> None:
    lib = Path("/sim/lib/gcc-12.2.0/cuda-11080/release")
    env = layout.with_library_dir({"LD_LIBRARY_PATH": f"/usr/local/cuda-13.0/lib:{lib}", "A": "1"}, lib)
    assert env == {"LD_LIBRARY_PATH": f"{lib}:/usr/local/cuda-13.0/lib", "A": "1"}
    assert layout.with_library_dir({}, lib) == {"LD_LIBRARY_PATH": str(lib)}
    assert layout.with_library_dir({"X": "1"}, None) == {"X": "1"}


def test_manifests_round_trip_and_bad_ones_say_why() -> None:
    manifest = build_manifest(
        "k", framework_commit="a" * 40, gpgpu_sim_commit=None, build_seconds=148.2, smoke_detail="ok"
    )
    assert layout.parse_manifest(manifest.to_json()) == manifest
    with pytest.raises(layout.ManifestError, match="not JSON"):
        layout.parse_manifest("{")
    with pytest.raises(layout.ManifestError, match="not a JSON object"):
        layout.parse_manifest("[]")
    with pytest.raises(layout.ManifestError, match="missing"):
        layout.parse_manifest('{"key": "k"}')


def fake_build(root: Path, smoke_passed: bool = True) -> Path:
    build_dir = root / "builds" / "abc"
    binary = layout.binary(build_dir)
    binary.parent.mkdir(parents=True)
    binary.write_text("")
    for name in ("SM7_QV100", "SM75_RTX2060"):
        config = layout.accelsim_dir(build_dir) / layout.TESTED_CFGS / name
        config.mkdir(parents=True)
        (config / "gpgpusim.config").write_text("")
    manifest = build_manifest("abc", smoke_passed=smoke_passed)
    (build_dir / layout.MANIFEST).write_text(manifest.to_json())
    return build_dir


def test_describe_says_which_simulator_a_data_dir_uses(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert layout.describe(data, None, stand_in_configs=8).model_dump(exclude_none=True) == {
        "kind": "stand-in",
        "configs": 8,
        "hint": layout.INSTALL_HINT,
    }
    build_dir = fake_build(tmp_path / "prefix")
    layout.point_current(data, build_dir)
    info = layout.describe(data, None)
    assert (info.kind, info.path, info.configs, info.smoke_passed) == (
        "installed",
        str(layout.accelsim_dir(build_dir)),
        2,
        True,
    )
    # CASCADE_ACCELSIM_DIR wins; without a binary it is named as the problem.
    elsewhere = tmp_path / "checkout"
    assert layout.describe(data, elsewhere).kind == "stand-in"
    assert "has no built" in (layout.describe(data, elsewhere).problem or "")
    assert layout.describe(data, layout.accelsim_dir(build_dir)).kind == "accelsim-dir"


def test_a_build_whose_smoke_run_failed_is_not_used(tmp_path: Path) -> None:
    data = tmp_path / "data"
    layout.point_current(data, fake_build(tmp_path / "prefix", smoke_passed=False))
    assert layout.installed_accelsim(data) is None
    assert layout.describe(data, None).kind == "stand-in"


def test_a_directory_where_the_current_link_goes_is_refused_and_no_link_is_left(tmp_path: Path) -> None:
    """Issue 32: `simulator/current` as a directory failed the switch with a bare OSError and
    left `.current-<pid>` behind; now a sentence, the directory untouched, nothing left over."""
    data = tmp_path / "data"
    current = layout.current_link(data)
    current.mkdir(parents=True)
    (current / "mine.txt").write_text("not Cascade's")
    build_dir = fake_build(tmp_path / "prefix")
    with pytest.raises(layout.CurrentLinkError, match="is a directory, not the link"):
        layout.point_current(data, build_dir)
    assert sorted(p.name for p in current.parent.iterdir()) == ["current"]
    assert (current / "mine.txt").read_text() == "not Cascade's"
    current.joinpath("mine.txt").unlink()
    current.rmdir()
    layout.point_current(data, build_dir)  # once it is moved away, the switch works
    assert layout.installed_build(data) == build_dir.resolve()
    assert sorted(p.name for p in current.parent.iterdir()) == ["current"]


def test_wheel_members_map_to_the_cuda_folder() -> None:
    assert cuda_wheels.member_target("nvidia/cuda_runtime/include/cuda_runtime.h") == Path(
        "include/cuda_runtime.h"
    )
    assert cuda_wheels.member_target("nvidia/cuda_nvcc/include/crt/host_defines.h") == Path(
        "include/crt/host_defines.h"
    )
    assert cuda_wheels.member_target("nvidia/cuda_nvcc/bin/ptxas") == Path("bin/ptxas")
    for other in (
        "nvidia/cuda_runtime/include/__init__.py",
        "nvidia/cuda_runtime/lib/libcudart.so.11.0",
        "nvidia_cuda_runtime_cu11-11.8.89.dist-info/RECORD",
        "nvidia/cuda_nvcc/bin/nvcc",
    ):
        assert cuda_wheels.member_target(other) is None, other
    assert cuda_wheels.VERSION_LINE in cuda_wheels.NVCC


def test_the_smoke_check_wants_the_exit_line_and_the_recorded_cycles() -> None:
    good = "gpu_sim_cycle = 6146\ngpu_sim_cycle = 5860\nGPGPU-Sim: *** exit detected ***\n"
    assert smoke.check_output(0, good)[0]
    assert smoke.check_output(0, good.replace("5860", "5861")) == (
        False,
        "gpu_sim_cycle [6146, 5861], expected [6146, 5860]",
    )
    loader = "accel-sim.out: symbol lookup error: accel-sim.out: undefined symbol: _ZTI10shd_warp_t\n"
    assert smoke.check_output(127, loader) == (False, f"exited with status 127: {loader.strip()}")


def test_a_sim_that_dies_before_its_first_kernel_fails_with_its_first_error_line() -> None:
    markers = OutputMarkers()
    markers.feed(
        "/opt/sim/bin/release/accel-sim.out: error while loading shared libraries: libcudart.so: "
        "cannot open shared object file: No such file or directory"
    )
    assert classify(127, markers).error == (
        "accel-sim.out: error while loading shared libraries: libcudart.so: cannot open shared object file: "
        "No such file or directory (exit status 127)"
    )
    later = OutputMarkers()
    for line in ("launching kernel name: _Z1kv uid: 1", "some error after the first kernel"):
        later.feed(line)
    assert classify(3, later).error == "exited with status 3"
    assert classify(0, OutputMarkers()).error == "exited 0 without the exit line"


def test_progress_lines_round_trip_to_the_ui() -> None:
    line = progress_line(0.45, 68, 150, 86.0)
    assert line == "progress: 45% (68/150 objects) 1m26s"
    assert parse_progress_line(line) == 0.45
    assert parse_progress(line) == (0.45, "68/150 objects, 1m26s")
    assert parse_progress("cascade simulator install: compiling") is None


def test_build_keys_name_the_sources() -> None:
    pinned = build_key(sources.resolve(sources.FRAMEWORK, None), sources.resolve(sources.GPGPU_SIM, None))
    assert pinned.startswith("73f9fac6-667834cf-") and layout.valid_key(pinned)
    other = sources.Source(sources.GPGPU_SIM, Path("/x.tar.gz"), "f" * 64, None)
    assert build_key(sources.resolve(sources.FRAMEWORK, None), other).startswith("73f9fac6-local-")
    assert sources.commit_from_name(sources.FRAMEWORK.filename) == sources.FRAMEWORK.commit
    with pytest.raises(sources.SourceError, match="no such file or directory"):
        sources.resolve(sources.FRAMEWORK, Path("/nonexistent/fw.tar.gz"))


def test_status_text_and_ui_lines() -> None:
    stand_in = SimulatorInfo(kind="stand-in", configs=8, hint=layout.INSTALL_HINT)
    assert status_text(stand_in, Path("/d")).splitlines()[0].startswith("simulator: the stand-in")
    assert "Press A" in simulator_line(stand_in)
    # Variants on the stand-in: said while the form is built, not only by the launch's 422.
    assert "Variants need the real Accel-Sim" in simulator_line(stand_in, variants=True)
    assert "Press A" in simulator_line(stand_in, variants=True)
    assert "Variants" not in simulator_line(stand_in)
    real = SimulatorInfo(
        kind="installed", path="/p/accel-sim", configs=9, smoke_passed=True, smoke_detail="ok"
    )
    assert simulator_line(real) == "Simulator: real Accel-Sim (installed, 9 configs)"
    assert "smoke run: passed (ok)" in status_text(real, Path("/d"))
    assert status_lines(real)[0] == "Sims run real Accel-Sim, installed by `cascade simulator install`."
    assert simulator_line(None) == ""
