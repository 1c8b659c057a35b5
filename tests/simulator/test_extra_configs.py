"""Issue 31: the configs `cascade simulator install` adds (the A100's): Accel-Sim's own files,
pinned by sha256, read offline from `--configs DIR`; only those a tree lacks; each folder whole."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from cascade_worker.simulator import extra_configs
from cascade_worker.simulator.extra_configs import EXTRA_CONFIGS, TESTED_CFGS, TRACE_CFGS, PinnedFile
from cascade_worker.simulator.sources import SourceError
from tests.accelsim_build import EXTRA_CONFIGS as SHARED_CONFIGS


def pinned_pair(tmp_path: Path) -> tuple[tuple[PinnedFile, ...], Path]:
    """Two small files pinned like the A100's, in a `--configs` folder."""
    local = tmp_path / "configs"
    (local / "SM99_TEST").mkdir(parents=True)
    files = []
    for name, folder in (("gpgpusim.config", TESTED_CFGS), ("trace.config", TRACE_CFGS)):
        text = f"-{name.split('.')[0]}_option 1\r\n".encode()
        (local / "SM99_TEST" / name).write_bytes(text)
        files.append(
            PinnedFile(
                "SM99_TEST", "o/r", "c" * 40, f"x/SM99_TEST/{name}", folder, hashlib.sha256(text).hexdigest()
            )
        )
    return tuple(files), local


def test_the_a100_files_are_pinned_to_accel_sims_commits():
    urls = {f.name: f.url for f in EXTRA_CONFIGS}
    assert urls == {
        "gpgpusim.config": "https://raw.githubusercontent.com/accel-sim/gpgpu-sim_distribution/"
        "9f767fb80a4fea83c6b767834ee3f76fe9898c50/configs/tested-cfgs/SM80_A100/gpgpusim.config",
        "trace.config": "https://raw.githubusercontent.com/accel-sim/accel-sim-framework/"
        "d907fc849f0f2b501aa4ef10689dd331bb76bf49/gpu-simulator/configs/tested-cfgs/SM80_A100/trace.config",
    }
    if (SHARED_CONFIGS / "SM80_A100").is_dir():  # the provenance folder holds exactly these bytes
        fetched = extra_configs.fetch(["SM80_A100"], SHARED_CONFIGS, Path("/nonexistent"))
        assert {p.name for p in fetched} == {"gpgpusim.config", "trace.config"}


def test_a_local_folder_is_read_and_checked_byte_for_byte(tmp_path):
    files, local = pinned_pair(tmp_path)
    fetched = extra_configs.fetch(["SM99_TEST"], local, tmp_path / "downloads", files)
    assert sorted(path.name for path in fetched.values()) == ["gpgpusim.config", "trace.config"]
    (local / "SM99_TEST" / "trace.config").write_bytes(b"-trace_option 1\n")  # CRLF lost on the way
    with pytest.raises(
        SourceError, match=r"trace.config is not Accel-Sim's SM99_TEST/trace.config \(o/r at cccccccc\)"
    ):
        extra_configs.fetch(["SM99_TEST"], local, tmp_path / "downloads", files)
    (local / "SM99_TEST" / "trace.config").unlink()
    with pytest.raises(SourceError, match=r"--configs .*: no SM99_TEST/trace.config there"):
        extra_configs.fetch(["SM99_TEST"], local, tmp_path / "downloads", files)
    assert extra_configs.fetch([], local, tmp_path / "downloads", files) == {}


def test_only_configs_a_tree_lacks_are_added_each_folder_whole(tmp_path):
    files, local = pinned_pair(tmp_path)
    tree = tmp_path / "accel-sim"
    assert extra_configs.missing(tree, files) == ["SM99_TEST"]
    fetched = extra_configs.fetch(["SM99_TEST"], local, tmp_path / "downloads", files)
    assert extra_configs.place(tree, fetched) == ["SM99_TEST"]
    assert (tree / TESTED_CFGS / "SM99_TEST" / "gpgpusim.config").read_bytes().endswith(b"\r\n")
    assert (tree / TRACE_CFGS / "SM99_TEST" / "trace.config").is_file()
    assert extra_configs.missing(tree, files) == []
    assert not list((tree / TESTED_CFGS).glob(".*")) and not list((tree / TRACE_CFGS).glob(".*"))


def test_a_checkout_that_has_the_config_keeps_its_own(tmp_path):
    """A newer Accel-Sim brings its own SM80_A100: install adds nothing over it."""
    tree = tmp_path / "accel-sim"
    own = tree / TESTED_CFGS / "SM80_A100" / "gpgpusim.config"
    own.parent.mkdir(parents=True)
    own.write_text("-gpgpu_clock_domains 1410:1410:1512:6048\n# the checkout's own\n")
    assert extra_configs.missing(tree) == []
