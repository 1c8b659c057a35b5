"""`cascade serve` as an operator runs it: a real process, its startup lines, its token file."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys

import httpx
import pytest

from tests.helpers import ServeProcess

pytestmark = pytest.mark.e2e  # `cascade serve` as a real process


def serve(data_dir, port=None, own_group=False, **env) -> ServeProcess:
    """`cascade serve` as an operator runs it: no sample data, otherwise the defaults."""
    return ServeProcess(data_dir, port, {"CASCADE_SAMPLES": "0", **env}, own_group=own_group)


async def test_serve_prints_url_and_a_stored_token(tmp_path):
    proc = await serve(tmp_path / "data").start()
    try:
        lines = proc.lines()
        assert lines["app"] == f"http://127.0.0.1:{proc.port}"
        token = lines["token"]
        token_file = tmp_path / "data" / "token"
        assert token_file.read_text().strip() == token
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        async with httpx.AsyncClient(base_url=lines["app"]) as http:
            health = (await http.get("/api/health")).json()
            assert health["ok"] is True
            # the embedded S3 endpoint, with what a profiler needs to upload
            assert health["s3_endpoint"] == lines["s3_endpoint"] and lines["s3_endpoint"].startswith(
                "http://127.0.0.1:"
            )
            assert lines["s3_bucket"] == "cascade" and lines["s3_access_key"] and lines["s3_secret_key"]
            assert (await http.get("/api/traces")).status_code == 401
            assert (
                await http.get("/api/traces", headers={"Authorization": f"Bearer {token}"})
            ).status_code == 200
    finally:
        assert await proc.stop() == 0, proc.logged()
    assert token not in proc.log.read_text()  # the token is printed once, on stdout, never logged

    await proc.start()  # the same token after a restart
    try:
        assert proc.lines()["token"] == token
    finally:
        assert await proc.stop(signal.SIGINT) == 0, proc.logged()


async def test_serve_with_a_given_token_and_a_busy_port(tmp_path):
    proc = await serve(tmp_path / "a", CASCADE_TOKEN="given-token").start()
    try:
        assert proc.lines()["token"] == "given-token"
        assert not (tmp_path / "a" / "token").exists()
        busy = serve(tmp_path / "b", proc.port)
        busy.spawn()
        assert await busy.ended() != 0
        assert "cannot listen" in busy.logged()
    finally:
        await proc.stop()


def test_cascade_help_lists_commands():
    out = subprocess.run([sys.executable, "-m", "cascade_tui.cli", "--help"], capture_output=True, text=True)
    assert out.returncode == 0
    for command in ("up", "serve", "tui", "worker", "upload"):
        assert f"  {command}" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "cascade_tui.cli", "nope"], capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown command 'nope'" in bad.stderr


async def test_ctrl_c_stops_serve_quietly(tmp_path):
    """Ctrl+C on a terminal sends SIGINT to the whole foreground process group: the embedded S3
    endpoint's rclone must not die of it and be mourned with a restart warning. Stopping is quiet."""
    proc = serve(tmp_path / "data", own_group=True)
    try:
        await proc.start()
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        assert await proc.ended() == 0, proc.logged()
    err = proc.logged()
    assert "is down" not in err and "WARNING" not in err, err
