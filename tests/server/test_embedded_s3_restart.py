"""The embedded S3 endpoint dies (a real `kill -9` of rclone): `cascade serve` starts it again on
the same port with the same credentials, says so in one log line per restart, and ingestion goes
on; while an endpoint is unreachable, /api/health says why (`s3_error`) until it answers again."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx
import pytest

from cascade_core.s3_endpoint import make_client
from cascade_server.traces import scanner as scanner_module
from tests.helpers import free_port, s3_answers, wait_until

from .test_serve_cli import serve

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


@pytest.mark.slow
async def test_a_killed_embedded_endpoint_is_restarted_and_ingestion_goes_on(tmp_path):
    s3_port = free_port()
    proc = await serve(tmp_path / "data", CASCADE_S3_PORT=str(s3_port), CASCADE_SCAN_INTERVAL_S="0.2").start()
    try:
        info = proc.s3_info()
        async with proc.client() as http:
            for n in (1, 2):  # twice: each death gets its restart and its line
                first = rclone_of(proc.pid)
                assert first is not None
                os.kill(first, signal.SIGKILL)
                second = await wait_until(
                    lambda old=first: (pid := rclone_of(proc.pid)) not in (None, old) and pid
                )
                await wait_until(lambda: s3_answers(info))  # same port, same credentials
                line = RESTART_LINE.format(port=s3_port, pid=first, n=n)
                assert proc.logged().count(line) == 1, proc.logged()
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
        assert await proc.stop() == 0, proc.logged()
    assert rclone_of(proc.pid) is None


async def s3_error(http: httpx.AsyncClient) -> str | None:
    """Why /api/health says the S3 endpoint is failing; None while it answers."""
    return (await http.get("/api/health")).json()["s3_error"]


async def s3_fine(http: httpx.AsyncClient) -> bool:
    return await s3_error(http) is None


async def test_health_says_why_the_endpoint_is_unreachable_while_it_is(endpoint_server):
    server, endpoint = await endpoint_server(2)
    async with server.client(token=None) as http:
        assert await s3_error(http) is None
        assert endpoint.proc is not None
        endpoint.proc.kill()  # kill -9: the endpoint is gone
        endpoint.proc.wait()
        error = await wait_until(lambda: s3_error(http))
        assert "\n" not in error and endpoint.info.endpoint in error, error
        await endpoint.start()
        await wait_until(lambda: s3_fine(http))


async def test_health_says_an_endpoint_that_stopped_answering_is_silent(endpoint_server, monkeypatch):
    # A stopped endpoint (SIGSTOP) still accepts connections and never answers: the client's
    # timeouts and retries take minutes, so health reports a listing waiting that long instead.
    monkeypatch.setattr(scanner_module, "STALLED_AFTER_S", 0.5)
    server, endpoint = await endpoint_server(4)
    async with server.client(token=None) as http:
        assert await s3_error(http) is None
        assert endpoint.proc is not None
        endpoint.proc.send_signal(signal.SIGSTOP)
        error = await wait_until(lambda: s3_error(http))
        assert error.startswith(f"no answer from {endpoint.info.endpoint} for ") and error.endswith(
            " s (listing the bucket)"
        ), error
        endpoint.proc.send_signal(signal.SIGCONT)  # the waiting listing gets its answer
        await wait_until(lambda: s3_fine(http))
