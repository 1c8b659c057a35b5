"""`cascade up` without the UI: reuse a running server, start one, explain a failed start."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest

from cascade_tui import up
from cascade_tui.connection import local_server
from cascade_tui.connection.config import DEFAULT_URL
from tests.conftest import free_port

from .helpers import ServeProcess

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]  # `cascade up` as a real process


@pytest.fixture(autouse=True)
def own_s3_port(monkeypatch):
    """Servers started here get their own embedded S3 port (the default 9020 may be taken)."""
    monkeypatch.setenv("CASCADE_S3_PORT", str(free_port()))


async def test_reuses_a_running_server_and_reads_its_token_file(tmp_path):
    serve = await ServeProcess(tmp_path / "data", free_port(), {"CASCADE_SAMPLES": "0"}).start()
    try:
        server = await asyncio.to_thread(up.find_or_start_server, serve.url, None, tmp_path / "data")
        assert not server.started_here and server.token == serve.token
        assert server.stop() is None  # not ours: left running
        assert up.health(serve.url) is not None
    finally:
        await serve.kill()


async def test_starts_a_server_then_stops_it(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"
    server = await asyncio.to_thread(up.find_or_start_server, url, None, tmp_path / "data")
    try:
        assert server.started_here and server.token
        assert server.token == (tmp_path / "data" / "token").read_text().strip()
        async with httpx.AsyncClient(
            base_url=url, headers={"Authorization": f"Bearer {server.token}"}
        ) as http:
            assert (await http.get("/api/runs")).status_code == 200
    finally:
        code = await asyncio.to_thread(server.stop)
    assert code is not None and up.health(url) is None


async def test_a_port_taken_by_something_else_is_explained(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        url = f"http://127.0.0.1:{busy.getsockname()[1]}"
        with pytest.raises(up.UpError, match=r"exited with status .* its log is"):
            await asyncio.to_thread(up.start_server, url, tmp_path / "data", tmp_path / "serve.log", 60)
    assert "cannot listen" in (tmp_path / "serve.log").read_text()


def test_only_local_http_urls_are_started(tmp_path):
    with pytest.raises(up.UpError, match="local http servers only"):
        up.start_server("https://cascade.example.com", None, tmp_path / "serve.log")


async def test_a_started_server_is_recorded_for_other_commands_and_a_reused_one_is_said(tmp_path):
    """`cascade up` notes the URL it started a server at in the data directory (it may be 8001:
    8000 was taken), so a second `cascade up` or `cascade runs` with no URL finds that server, and
    says it uses it; the record goes when the server it started stops."""
    data = tmp_path / "data"
    url = f"http://127.0.0.1:{free_port()}"
    server = await asyncio.to_thread(up.find_or_start_server, url, None, data)
    try:
        assert (data / "url").read_text() == url + "\n"
        found = await asyncio.to_thread(local_server.local_server, DEFAULT_URL, False, None, data)
        assert found == (url, server.token)
        # a URL the operator gave wins; a Cascade server of this machine there gets its token
        # file (issue 32: with CASCADE_URL set the commands still find the local server's
        # token), nothing else does (no server on the port, a server elsewhere)
        assert await asyncio.to_thread(local_server.local_server, url, True, None, data) == (
            url,
            server.token,
        )
        given = f"http://127.0.0.1:{free_port()}"
        assert local_server.local_server(given, True, None, data) == (given, None)
        elsewhere = "http://gpu-box.lab.example:8000"
        assert local_server.local_server(elsewhere, True, None, data) == (elsewhere, None)
        again = await asyncio.to_thread(up.find_or_start_server, url, None, data)
        assert not again.started_here and again.token == server.token
        assert again.notes == [f"using the server already running at {url} (it keeps running when you quit)"]
    finally:
        await asyncio.to_thread(server.stop)
    assert not (data / "url").exists()
