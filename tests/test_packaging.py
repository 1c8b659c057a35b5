"""Cascade installs like a package: the samples are package data (found with importlib.resources,
not by a path into the source tree), the wheel carries every one of them, `cascade --version`.
The full install of the wheel into a fresh venv is `.ci/wheel_smoke.py`, run by `.ci/run`."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import zipfile
from importlib.resources import files
from pathlib import Path

import pytest

from cascade_core.packaged import samples_dir
from cascade_server.gpu_configs import scan_gpu_configs
from cascade_server.settings import Settings
from cascade_server.traces.embedded_s3 import DEMO_TRACE_IDS

REPO = Path(__file__).resolve().parents[1]


def test_the_samples_are_found_inside_the_package():
    found = samples_dir()
    assert found == Path(str(files("cascade_core"))) / "sample_data"
    assert Settings().samples_dir == found
    assert len(scan_gpu_configs(Settings().configs_root)) == 11
    for trace_id in DEMO_TRACE_IDS:
        assert (found / "accelsim-traces" / trace_id / "traces" / "kernelslist.g").is_file()
    assert (found / "recordings" / "recordings.json").is_file()
    assert (found / "sample-trace" / "stats.csv").is_file()


def test_cascade_version():
    result = subprocess.run(
        [sys.executable, "-m", "cascade_tui.cli", "--version"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"cascade {importlib.metadata.version('cascade-sim')}\n"


@pytest.mark.slow  # builds a wheel
def test_the_wheel_carries_every_sample(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(REPO)],
        check=True,
        capture_output=True,
        timeout=280,
    )
    wheel = next(tmp_path.glob("cascade_sim-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    samples = {
        p.relative_to(REPO / "samples").as_posix() for p in (REPO / "samples").rglob("*") if p.is_file()
    }
    assert len(samples) > 50
    assert {f"cascade_core/sample_data/{rel}" for rel in samples} <= names
    assert "cascade_tui/cascade.tcss" in names
