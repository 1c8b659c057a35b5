"""`cascade serve` as an operator runs it: a real process, its startup lines, its token file."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys

import httpx
import pytest

from tests.helpers import free_port

pytestmark = pytest.mark.e2e  # `cascade serve` as a real process


def start(data_dir, port, own_group=False, **env):
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CASCADE_")}
    environ.update(
        {"CASCADE_SAMPLES": "0", "CASCADE_LAUNCHER": "manual", "CASCADE_S3_PORT": str(free_port()), **env}
    )
    data_dir.mkdir(parents=True, exist_ok=True)
    # stderr to a file: a pipe nobody reads could fill up and stall the server
    stderr = open(data_dir.parent / f"{data_dir.name}-{port}-{os.urandom(3).hex()}.stderr", "w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "cascade_tui.cli", "serve", "--port", str(port), "--data-dir", str(data_dir)],
        env=environ,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        # own_group: a process group of its own, as a shell gives a foreground job, so a test can
        # send the group a SIGINT as Ctrl+C on a terminal does.
        process_group=0 if own_group else None,
    )
    proc.stderr_file = stderr
    return proc


def stderr_of(proc) -> str:
    proc.stderr_file.seek(0)
    return proc.stderr_file.read()


def startup_lines(proc) -> dict[str, str]:
    lines = {}
    while "s3_secret_key" not in lines:
        line = proc.stdout.readline()
        assert line, stderr_of(proc)
        key, _, value = line.strip().partition(": ")
        lines[key] = value
    return lines


def test_serve_prints_url_and_a_stored_token(tmp_path):
    port = free_port()
    proc = start(tmp_path / "data", port)
    try:
        lines = startup_lines(proc)
        assert lines["app"] == f"http://127.0.0.1:{port}"
        token = lines["token"]
        token_file = tmp_path / "data" / "token"
        assert token_file.read_text().strip() == token
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        health = httpx.get(f"{lines['app']}/api/health").json()
        assert health["ok"] is True
        # the embedded S3 endpoint, with what a profiler needs to upload
        assert health["s3_endpoint"] == lines["s3_endpoint"] and lines["s3_endpoint"].startswith(
            "http://127.0.0.1:"
        )
        assert lines["s3_bucket"] == "cascade" and lines["s3_access_key"] and lines["s3_secret_key"]
        assert httpx.get(f"{lines['app']}/api/traces").status_code == 401
        assert (
            httpx.get(f"{lines['app']}/api/traces", headers={"Authorization": f"Bearer {token}"}).status_code
            == 200
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, stderr_of(proc)
    assert token not in stderr_of(proc)  # the token is printed once, on stdout, never logged

    proc = start(tmp_path / "data", port)  # the same token after a restart
    try:
        assert startup_lines(proc)["token"] == token
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0, stderr_of(proc)


def test_serve_with_a_given_token_and_a_busy_port(tmp_path):
    port = free_port()
    proc = start(tmp_path / "a", port, CASCADE_TOKEN="given-token")
    try:
        assert startup_lines(proc)["token"] == "given-token"
        assert not (tmp_path / "a" / "token").exists()
        busy = start(tmp_path / "b", port)
        assert busy.wait(timeout=60) != 0
        assert "cannot listen" in stderr_of(busy)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def test_cascade_help_lists_commands():
    out = subprocess.run([sys.executable, "-m", "cascade_tui.cli", "--help"], capture_output=True, text=True)
    assert out.returncode == 0
    for command in ("up", "serve", "tui", "worker", "upload"):
        assert f"  {command}" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "cascade_tui.cli", "nope"], capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown command 'nope'" in bad.stderr


def test_ctrl_c_stops_serve_quietly(tmp_path):
    """Ctrl+C on a terminal sends SIGINT to the whole foreground process group: the embedded S3
    endpoint's rclone must not die of it and be mourned with a restart warning. Stopping is quiet."""
    proc = start(tmp_path / "data", free_port(), own_group=True)
    try:
        startup_lines(proc)
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=60) == 0, stderr_of(proc)
    err = stderr_of(proc)
    assert "is down" not in err and "WARNING" not in err, err
