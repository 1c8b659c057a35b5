"""The embedded S3 endpoint dies (a real `kill -9` of rclone): `cascade serve` starts it again on
the same port with the same credentials, says so in one log line per restart, and ingestion goes
on; while an endpoint is unreachable, /api/health says why (`s3_error`) until it answers again."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from cascade_core.s3_endpoint import S3Info, make_client
from cascade_server.traces import scanner as scanner_module
from cascade_server.traces.embedded_s3 import rclone_binary
from tests.helpers import free_port, wait_until

from .test_serve_cli import start, startup_lines, stderr_of

RESTART_LINE = "embedded S3 endpoint http://127.0.0.1:{port} is down (rclone (pid {pid}) exited, killed by SIGKILL): restart {n} in "


def rclone_of(server_pid: int) -> int | None:
    """The pid of the `rclone` child of `server_pid` that is alive, if any."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
        if name == "rclone" and int(rest[1]) == server_pid and rest[0] != "Z":
            return int(entry.name)
    return None


def s3_answers(info: S3Info) -> bool:
    try:
        make_client(info).list_objects_v2(Bucket=info.bucket, MaxKeys=1)
    except Exception:  # noqa: BLE001 - refused, reset: not (yet) answering
        return False
    return True


@pytest.mark.slow
async def test_a_killed_embedded_endpoint_is_restarted_and_ingestion_goes_on(tmp_path):
    port, s3_port = free_port(), free_port()
    proc = start(tmp_path / "data", port, CASCADE_S3_PORT=str(s3_port), CASCADE_SCAN_INTERVAL_S="0.2")
    try:
        lines = startup_lines(proc)
        info = S3Info(
            lines["s3_endpoint"], lines["s3_bucket"], lines["s3_access_key"], lines["s3_secret_key"]
        )
        headers = {"Authorization": f"Bearer {lines['token']}"}
        async with httpx.AsyncClient(base_url=lines["app"], headers=headers, timeout=30) as http:
            for n in (1, 2):  # twice: each death gets its restart and its line
                first = rclone_of(proc.pid)
                assert first is not None
                os.kill(first, signal.SIGKILL)
                second = await wait_until(
                    lambda old=first: (pid := rclone_of(proc.pid)) not in (None, old) and pid
                )
                await wait_until(lambda: s3_answers(info))  # same port, same credentials
                line = RESTART_LINE.format(port=s3_port, pid=first, n=n)
                assert stderr_of(proc).count(line) == 1, stderr_of(proc)
                assert second != first

            # Uploads through the restarted endpoint are ingested.
            s3 = make_client(info)
            s3.put_object(Bucket=info.bucket, Key="accelsim-traces/after/traces/kernel-1.trace", Body=b"x")
            s3.put_object(
                Bucket=info.bucket, Key="accelsim-traces/after/metadata.json", Body=b'{"status": "failed"}'
            )

            async def ingested() -> bool:
                resp = await http.get("/api/traces/after")
                return resp.status_code == 200 and resp.json()["state"] == "failed"

            await wait_until(ingested)
            assert (await http.get("/api/health")).json()["s3_error"] is None
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, stderr_of(proc)
    assert rclone_of(proc.pid) is None


def start_rclone(port: int, root: Path, info: S3Info) -> subprocess.Popen:
    return subprocess.Popen(
        [str(rclone_binary()), "serve", "s3", "--addr", f"127.0.0.1:{port}", str(root)],
        env={"RCLONE_AUTH_KEY": f'"{info.access_key},{info.secret_key}"', "RCLONE_CONFIG": "/dev/null"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def own_endpoint(tmp_path: Path, monkeypatch, n: int) -> tuple[S3Info, int]:
    """The settings of an S3 endpoint of the test's own on a free port (credentials number `n`),
    its bucket made and its credentials in the environment, where the scanner reads them."""
    port = free_port()
    info = S3Info(f"http://127.0.0.1:{port}", "cascade", f"TESTACCESSKEY000{n}", f"testsecretkey000000000{n}")
    (tmp_path / "s3" / "cascade").mkdir(parents=True)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", info.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", info.secret_key)
    return info, port


async def test_health_says_why_the_endpoint_is_unreachable_while_it_is(make_server, tmp_path, monkeypatch):
    info, port = own_endpoint(tmp_path, monkeypatch, 2)
    rclone = start_rclone(port, tmp_path / "s3", info)
    try:
        await wait_until(lambda: s3_answers(info))
        server = await make_server(s3_endpoint=info.endpoint, s3_bucket="cascade", scan_interval_s=0.1)
        async with server.client(token=None) as http:

            async def s3_error() -> str | None:
                return (await http.get("/api/health")).json()["s3_error"]

            assert await s3_error() is None
            rclone.kill()  # kill -9: the endpoint is gone
            rclone.wait()
            error = await wait_until(s3_error)
            assert "\n" not in error and info.endpoint in error, error
            rclone = start_rclone(port, tmp_path / "s3", info)
            await wait_until(lambda: s3_answers(info))
            await wait_until(lambda: _is_none(s3_error()))
    finally:
        rclone.kill()
        rclone.wait()


async def _is_none(value) -> bool:
    return await value is None


async def test_health_says_an_endpoint_that_stopped_answering_is_silent(make_server, tmp_path, monkeypatch):
    # A stopped endpoint (SIGSTOP) still accepts connections and never answers: the client's
    # timeouts and retries take minutes, so health reports a listing waiting that long instead.
    monkeypatch.setattr(scanner_module, "STALLED_AFTER_S", 0.5)
    info, port = own_endpoint(tmp_path, monkeypatch, 4)
    rclone = start_rclone(port, tmp_path / "s3", info)
    try:
        await wait_until(lambda: s3_answers(info))
        server = await make_server(s3_endpoint=info.endpoint, s3_bucket="cascade", scan_interval_s=0.1)
        async with server.client(token=None) as http:

            async def s3_error() -> str | None:
                return (await http.get("/api/health")).json()["s3_error"]

            assert await s3_error() is None
            rclone.send_signal(signal.SIGSTOP)
            error = await wait_until(s3_error)
            assert error.startswith(f"no answer from {info.endpoint} for ") and error.endswith(
                " s (listing the bucket)"
            ), error
            rclone.send_signal(signal.SIGCONT)  # the waiting listing gets its answer
            await wait_until(lambda: _is_none(s3_error()))
    finally:
        rclone.send_signal(signal.SIGCONT)
        rclone.kill()
        rclone.wait()
