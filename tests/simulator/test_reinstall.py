"""Installing again with no flags (the UI's `i`): the sources and the place of the build the
server uses, when they were local and are still there; never a download that a machine without
GitHub access cannot make."""

from __future__ import annotations

from pathlib import Path

from cascade_core import simulator_layout as layout
from cascade_worker.simulator.cli import previous_sources


def installed(tmp_path: Path, framework: str, gpgpu_sim: str) -> Path:
    data = tmp_path / "data"
    build = tmp_path / "prefix" / "builds" / "k1"
    build.mkdir(parents=True)
    manifest = layout.Manifest(
        key="k1",
        framework_commit=None,
        gpgpu_sim_commit=None,
        framework_source=framework,
        gpgpu_sim_source=gpgpu_sim,
        built_at="2026-12-01T00:00:00+00:00",
        build_seconds=1.0,
        smoke_passed=True,
    )
    (build / layout.MANIFEST).write_text(manifest.to_json())
    layout.simulator_root(data).mkdir(parents=True)
    layout.current_link(data).symlink_to(build)
    return data


def test_a_build_from_local_sources_is_installed_again_from_them_in_its_place(tmp_path):
    framework, gpgpu_sim = tmp_path / "fw.tar.gz", tmp_path / "gs"
    framework.write_bytes(b"x")
    gpgpu_sim.mkdir()
    data = installed(tmp_path, str(framework), str(gpgpu_sim))
    assert previous_sources(data) == (framework, gpgpu_sim, tmp_path / "prefix")


def test_pinned_or_moved_sources_and_no_build_give_nothing(tmp_path):
    assert previous_sources(tmp_path / "nothing") is None
    pinned = installed(tmp_path / "a", "https://codeload.github.com/x", "https://codeload.github.com/y")
    assert previous_sources(pinned) is None
    moved = installed(tmp_path / "b", str(tmp_path / "gone.tar.gz"), str(tmp_path / "gone"))
    assert previous_sources(moved) is None
