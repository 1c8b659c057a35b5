import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cascade_worker.replay import (
    INST_STATS_FILE,
    RecordingError,
    find_recording,
    pacing,
    read_lines,
    recording_from_path,
)

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

KERNEL = [
    "launching kernel name: k uid: {uid}",
    "thread block = 0,0,0",
    "thread block = 1,0,0",
    "kernel_name = k ",
    "gpu_sim_cycle = {cycles}",
    "gpgpu_silicon_slowdown = 1x",
]


def kernel(uid, cycles):
    return [line.format(uid=uid, cycles=cycles) for line in KERNEL]


def test_pacing_shares_wall_time_by_cycles_over_the_kernel_lines():
    lines = ["-config echo", *kernel(1, 100), *kernel(2, 300), "GPGPU-Sim: *** exit detected ***"]
    delays = pacing(lines, 8.0)
    assert abs(sum(delays) - 8.0) < 1e-9
    # Kernel 1 (2 s) over its 3 busy lines: two thread blocks and the stats block's first line.
    assert delays[1:7] == [0.0, 2 / 3, 2 / 3, 2 / 3, 0.0, 0.0]
    assert delays[7:13] == [0.0, 2.0, 2.0, 2.0, 0.0, 0.0]
    assert delays[0] == 0.0 and delays[-1] == 0.0


def test_pacing_without_kernels_is_uniform():
    assert pacing(["a", "b"], 1.0) == [0.5, 0.5]
    assert pacing([], 1.0) == []


def test_every_config_with_a_recording_gets_its_own_and_others_the_default():
    assert find_recording(SAMPLES, "SM7_TITANV").config == "SM7_TITANV"
    default = find_recording(SAMPLES, "SM90_H100")
    manifest = json.loads((SAMPLES / "recordings" / "recordings.json").read_text())
    assert default.config == manifest["default"] and default.config.startswith("SM7_")
    assert default.path.is_file() and default.wall_seconds > 0


def test_missing_recordings_are_a_clear_error(tmp_path):
    with pytest.raises(RecordingError, match="no recordings"):
        find_recording(tmp_path, "SM7_QV100")
    with pytest.raises(RecordingError, match="does not exist"):
        recording_from_path(tmp_path / "nope.log", None)


def test_wall_seconds_beside_a_replayed_log(tmp_path):
    (tmp_path / "run.log").write_text("x\n")
    (tmp_path / "wall_seconds").write_text("12.5\n")
    assert recording_from_path(tmp_path / "run.log", None).wall_seconds == 12.5
    assert recording_from_path(tmp_path / "run.log", 3.0).wall_seconds == 3.0


def test_read_lines_gives_back_the_bytes(tmp_path):
    path = tmp_path / "log.gz"
    path.write_bytes(gzip.compress(b"a\n\nb\tc\n"))
    assert read_lines(path) == ["a", "", "b\tc"]


def test_the_replay_process_prints_the_recording_byte_for_byte(tmp_path):
    recording = find_recording(SAMPLES, "SM75_RTX2060")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "cascade_worker.replay",
            str(recording.path),
            "--speed",
            "1000",
            "--wall-seconds",
            str(recording.wall_seconds),
        ],
        cwd=tmp_path,
        capture_output=True,
        check=True,
    )
    assert out.stdout == gzip.decompress(recording.path.read_bytes())
    assert (tmp_path / INST_STATS_FILE).read_text().startswith("kernel line :")
