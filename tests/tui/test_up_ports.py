"""Issue 13: `cascade up` says why `cascade serve` failed (the cause line of serve.log), and picks
free ports when the default ones are taken (and only then)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from cascade_server.settings import Settings
from cascade_tui import up
from cascade_tui.connection import ports
from cascade_tui.connection.serve_log import cause_from_log
from tests.conftest import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]  # `cascade up` as a real process


@contextmanager
def listening() -> Iterator[int]:
    """A port some other program listens on."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        yield busy.getsockname()[1]


def test_the_default_s3_port_is_the_servers():
    assert ports.DEFAULT_S3_PORT == Settings.model_fields["s3_port"].default


@pytest.mark.parametrize(
    ("log", "cause"),
    [
        (
            "2026-11-30 INFO x: starting\ncascade serve: cannot listen on 127.0.0.1:8000: Address already in use\n",
            "cannot listen on 127.0.0.1:8000: Address already in use",
        ),
        (
            'Traceback (most recent call last):\n  File "x.py", line 1\nOSError: [Errno 28] No space left on device\n',
            "OSError: [Errno 28] No space left on device",
        ),
        (
            "2026-11-30 12:00:00,000 ERROR cascade_server.app: the database is locked\n2026-11-30 INFO bye\n",
            "2026-11-30 12:00:00,000 ERROR cascade_server.app: the database is locked",
        ),
        ("2026-11-30 INFO all fine\n", None),
        ("", None),
    ],
)
def test_the_cause_is_serves_exit_message_else_the_exception_else_an_error_line(log, cause):
    assert cause_from_log(log) == cause


def test_a_taken_default_app_port_moves_to_the_next_free_one():
    with listening() as taken:
        url, env, notes = ports.choose_free_ports(f"http://127.0.0.1:{taken}", {"CASCADE_S3_PORT": "1"})
    new = int(url.rsplit(":", 1)[1])
    assert new > taken and env == {}
    assert notes == [
        f"port {taken} is taken by another program: the server listens on {new} instead "
        f"(http://127.0.0.1:{new}; --url or CASCADE_URL to choose)"
    ]


def test_a_taken_default_s3_port_moves_unless_the_operator_chose_one(monkeypatch):
    app = f"http://127.0.0.1:{free_port()}"
    with listening() as taken:
        monkeypatch.setattr(ports, "DEFAULT_S3_PORT", taken)
        url, env, notes = ports.choose_free_ports(app, {})
        assert url == app and int(env["CASCADE_S3_PORT"]) > taken
        assert notes[0].startswith(
            f"port {taken} is taken: the embedded S3 endpoint listens on {env['CASCADE_S3_PORT']}"
        )
        for chosen in ({"CASCADE_S3_PORT": str(taken)}, {"CASCADE_S3_ENDPOINT": "http://minio:9000"}):
            assert ports.choose_free_ports(app, chosen) == (app, {}, [])


def test_a_chosen_url_keeps_its_port_but_an_unchosen_s3_port_still_moves(monkeypatch):
    # `cascade up --url http://127.0.0.1:8001` beside another server: 8001 is the operator's,
    # the embedded S3 endpoint's 9020 is not, and another server holds it.
    with listening() as taken_app, listening() as taken_s3:
        monkeypatch.setattr(ports, "DEFAULT_S3_PORT", taken_s3)
        app = f"http://127.0.0.1:{taken_app}"
        url, env, notes = ports.choose_free_ports(app, {}, url_chosen=True)
        assert url == app and int(env["CASCADE_S3_PORT"]) > taken_s3 and len(notes) == 1


async def test_a_failed_start_names_its_cause_from_the_log(tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "serve.log").write_text("cascade serve: an older failure, not this one\n")
    with listening() as taken:
        monkeypatch.setenv("CASCADE_S3_PORT", str(taken))
        with pytest.raises(up.UpError) as failed:
            await asyncio.to_thread(
                up.start_server,
                f"http://127.0.0.1:{free_port()}",
                tmp_path / "data",
                tmp_path / "data" / "serve.log",
                60,
            )
    assert str(failed.value) == (
        "`cascade serve` exited with status 1 before it was ready: cannot start the embedded S3 endpoint: "
        f"127.0.0.1:{taken} is already in use (set CASCADE_S3_PORT, or CASCADE_S3_ENDPOINT to use that "
        f"server); its log is {tmp_path / 'data' / 'serve.log'}"
    )


async def test_free_ports_only_for_a_server_it_starts(tmp_path, monkeypatch):
    """A Cascade server answering at the URL is used as it is, whatever the ports."""
    monkeypatch.setenv("CASCADE_S3_PORT", str(free_port()))
    url = f"http://127.0.0.1:{free_port()}"
    first = await asyncio.to_thread(up.find_or_start_server, url, None, tmp_path / "data", free_ports=True)
    try:
        assert first.started_here and first.notes == []
        again = await asyncio.to_thread(
            up.find_or_start_server, url, None, tmp_path / "data", free_ports=True
        )
        assert not again.started_here and again.url == url and again.token == first.token
    finally:
        await asyncio.to_thread(first.stop)
