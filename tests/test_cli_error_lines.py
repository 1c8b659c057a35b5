"""Settings and environment errors of `cascade` commands: one line and an exit code, found before
anything starts, never a traceback. Real processes, as a user runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def cascade(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CASCADE_")}
    return subprocess.run(
        [sys.executable, "-m", "cascade_tui.cli", *argv],
        capture_output=True,
        text=True,
        env={**clean, **(env or {})},
        timeout=120,
    )


@pytest.mark.parametrize(
    "flags, env, line",
    [
        (["--port", "99999"], {}, "CASCADE_PORT / --port: must be a number from 1 to 65535 (got 99999)"),
        (["--port", "-1"], {}, "CASCADE_PORT / --port: must be a number from 1 to 65535 (got -1)"),
        ([], {"CASCADE_PORT": "0"}, "CASCADE_PORT / --port: must be a number from 1 to 65535 (got '0')"),
        ([], {"CASCADE_S3_PORT": "70000"}, "CASCADE_S3_PORT: must be a number from 1 to 65535 (got '70000')"),
    ],
)
def test_serve_refuses_a_port_out_of_range_before_anything_starts(tmp_path, flags, env, line):
    data_dir = tmp_path / "data"
    done = cascade("serve", "--data-dir", str(data_dir), *flags, env=env)
    assert (done.returncode, done.stderr) == (2, f"cascade serve: invalid settings: {line}\n")
    assert not data_dir.exists()  # no database opened, no rclone started


@pytest.mark.parametrize("value, got", [("nan", "nan"), ("9", "9.0"), ("0.1", "0.1")])
def test_tui_refresh_hz_out_of_range_names_the_whole_range(value, got):
    done = cascade("tui", "--refresh-hz", value)
    assert (done.returncode, done.stdout) == (2, "")
    assert (
        done.stderr
        == f"cascade tui: CASCADE_REFRESH_HZ / --refresh-hz must be a number from 0.5 to 4 (got {got})\n"
    )


def test_upload_names_a_wrong_setting_in_one_line(tmp_path: Path):
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "kernelslist.g").write_text("kernel-1.traceg\n")
    (tmp_path / "traces" / "kernel-1.traceg").write_text("-kernel name = k\n")
    a_file = tmp_path / "passwd"
    a_file.write_text("root\n")
    done = cascade("upload", str(tmp_path), "--trace-id", "t1", env={"CASCADE_DATA_DIR": str(a_file)})
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"cascade upload: invalid settings: CASCADE_DATA_DIR: {a_file} is not a directory\n"


@pytest.mark.slow
def test_serve_says_a_data_dir_that_is_a_file_is_not_a_directory(tmp_path: Path):
    a_file = tmp_path / "passwd"
    a_file.write_text("root:x:0:0::/root:/bin/sh\n")
    done = cascade("serve", "--data-dir", str(a_file))
    assert (done.returncode, done.stderr) == (
        2,
        f"cascade serve: invalid settings: CASCADE_DATA_DIR / --data-dir: {a_file} is not a directory\n",
    )
    below = cascade("serve", "--data-dir", str(a_file / "cascade"))
    assert (below.returncode, below.stderr) == (
        2,
        f"cascade serve: invalid settings: CASCADE_DATA_DIR / --data-dir: {a_file / 'cascade'} cannot be "
        f"a directory: {a_file} is a file\n",
    )
    assert a_file.read_text() == "root:x:0:0::/root:/bin/sh\n"


def test_up_refuses_a_data_dir_that_is_a_file_before_starting_a_server(tmp_path: Path):
    a_file = tmp_path / "passwd"
    a_file.write_text("x\n")
    done = cascade("up", "--data-dir", str(a_file))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"cascade up: argument --data-dir: {a_file} is not a directory (--help for usage)\n"


def test_a_closed_pipe_ends_any_command_quietly(tmp_path):
    """`cascade simulator status | head -1`: no traceback, exit 0, whichever command printed."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "CASCADE_DATA_DIR": str(tmp_path)}
    for command in ("simulator status", "--help"):
        shell = f"{sys.executable} -m cascade_tui.cli {command} | head -c 1"
        out = subprocess.run(
            ["bash", "-o", "pipefail", "-c", shell], capture_output=True, text=True, env=env, timeout=60
        )
        assert "Traceback" not in out.stderr and "BrokenPipe" not in out.stderr, out.stderr
