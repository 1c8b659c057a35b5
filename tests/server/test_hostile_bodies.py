"""Issue 19: bodies the server cannot decode (a corrupt gzip or deflate body, a login form that is
not URL-encoded UTF-8) and browser input it must not trust (`?fontsize=²`, websocket messages of
any shape) get a 400 or are ignored: never a 500, a reset connection or a traceback in the log,
and an unauthenticated request makes the server log one short line at most. Raw HTTP on a real
server's port, since an HTTP client will not send most of these."""

from __future__ import annotations

import gzip
import json
import logging
import zlib

import aiohttp
import pytest

from cascade_server.web_ui import COOKIE, cookie_value
from tests.conftest import TOKEN, LiveServer
from tests.server.test_http_edges import exchange

AUTH = f"Authorization: Bearer {TOKEN}\r\n".encode()
RUN_JSON = b'{"trace_id": "t", "entries": [{"gpu_config": "SM7_QV100", "count": 1}]}'


def post(path: str, content_type: str, body: bytes, *extra: bytes) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
    ).encode()
    return head + b"".join(extra) + b"\r\n" + body


def gzip_cut(body: bytes) -> bytes:
    """A gzip stream with its middle overwritten: the header is right, the data is not."""
    packed = bytearray(gzip.compress(body * 20))
    packed[12:40] = b"\xff" * 28
    return bytes(packed)


def deflate_corrupt(body: bytes) -> bytes:
    packed = bytearray(zlib.compress(body * 20))
    packed[4:30] = b"\xee" * 26
    return bytes(packed)


BAD_BODIES = {
    "api, corrupt gzip": post(
        "/api/runs", "application/json", gzip_cut(RUN_JSON), AUTH, b"Content-Encoding: gzip\r\n"
    ),
    "api, corrupt deflate": post(
        "/api/runs", "application/json", deflate_corrupt(RUN_JSON), AUTH, b"Content-Encoding: deflate\r\n"
    ),
    "api, not deflate at all": post(
        "/api/runs", "application/json", b"0123456789" * 5, AUTH, b"Content-Encoding: deflate\r\n"
    ),
    "log chunk, corrupt gzip": post(
        "/api/sims/sim-000000000000/logs",
        "application/json",
        gzip_cut(b'{"seq": 0, "lines": ["x"]}'),
        AUTH,
        b"Content-Encoding: gzip\r\n",
    ),
    "login, corrupt gzip": post(
        "/web-ui/login",
        "application/x-www-form-urlencoded",
        gzip_cut(b"token=abc"),
        b"Content-Encoding: gzip\r\n",
    ),
    "login, corrupt deflate": post(
        "/web-ui/login",
        "application/x-www-form-urlencoded",
        deflate_corrupt(b"token=a"),
        b"Content-Encoding: deflate\r\n",
    ),
    "login, bytes not UTF-8": post(
        "/web-ui/login", "application/x-www-form-urlencoded", b"token=\xff\xfe\xfd"
    ),
    "login, escapes not UTF-8": post("/web-ui/login", "application/x-www-form-urlencoded", b"token=%ff%fe"),
    "login, utf-16": post(
        "/web-ui/login", "application/x-www-form-urlencoded; charset=utf-16", "token=abc".encode("utf-16")
    ),
    "login, unknown charset": post(
        "/web-ui/login", "application/x-www-form-urlencoded; charset=x-nope", b"token=a"
    ),
    "login, broken multipart": post(
        "/web-ui/login", "multipart/form-data; boundary=zz", b"--zz\r\nbroken\r\n"
    ),
    "login, multipart with no boundary": post(
        "/web-ui/login", "multipart/form-data", b"--zz\r\n\r\n--zz--\r\n"
    ),
    "login, a JSON body": post("/web-ui/login", "application/json", b'{"token": "abc"}'),
    "login, too many fields": post(
        "/web-ui/login", "application/x-www-form-urlencoded", b"&".join([b"a=1"] * 50)
    ),
}


@pytest.mark.parametrize("name", BAD_BODIES)
async def test_a_body_the_server_cannot_decode_is_a_400_with_one_short_log_line_at_most(
    make_server, caplog, name
):
    server: LiveServer = await make_server()
    caplog.set_level(logging.DEBUG)
    status, headers, body = await exchange(server, BAD_BODIES[name])
    assert status == 400, body
    assert headers["content-type"].startswith("application/json")
    detail = json.loads(body)["detail"]
    assert isinstance(detail, str) and 10 < len(detail) < 200
    records = [
        r for r in caplog.records if r.levelno >= logging.INFO and r.name.startswith(("cascade", "aiohttp"))
    ]
    assert all(r.exc_info is None for r in records), [r.getMessage() for r in records]
    assert all("\n" not in r.getMessage() and len(r.getMessage()) < 300 for r in records)
    async with server.client() as http:  # and the server goes on serving
        assert (await http.get("/api/runs")).status_code == 200


async def test_a_well_formed_login_still_works_in_utf8_with_its_charset(make_server):
    server: LiveServer = await make_server()
    form = "application/x-www-form-urlencoded; charset=UTF-8"
    status, headers, _ = await exchange(server, post("/web-ui/login", form, f"token={TOKEN}".encode()))
    assert status == 303 and cookie_value(TOKEN) in headers["set-cookie"]
    status, _, _ = await exchange(server, post("/web-ui/login", form, b"token=caf%C3%A9"))
    assert status == 401


@pytest.mark.parametrize(
    "query",
    ["fontsize=%C2%B2", "fontsize=%D9%A3", "fontsize=99999999999999999999", "fontsize=-3", "fontsize=1e9"],
)
async def test_odd_page_parameters_fall_back_to_the_default(make_server, query):
    server: LiveServer = await make_server()
    request = f"GET /?{query} HTTP/1.1\r\nHost: x\r\nCookie: {COOKIE}={cookie_value(TOKEN)}\r\n\r\n".encode()
    status, _, body = await exchange(server, request)
    assert status == 200, body
    assert b'data-font-size="16"' in body or b'data-font-size="48"' in body


BAD_MESSAGES = [
    '["resize", "x"]',
    '["resize", {"width": "a", "height": 3}]',
    '["resize", {}]',
    '["resize", null]',
    '["resize", {"width": 1e308, "height": 2}]',
    '["resize", {"width": true, "height": 9}]',
    "5",
    '{"a": 1, "b": 2}',
    '["stdin"]',
    "[1, 2]",
    '"text"',
    "not json",
    '["resize", [1, 2]]',
]


async def test_websocket_messages_of_any_shape_are_ignored_and_the_session_goes_on(make_server, tmp_path):
    server: LiveServer = await make_server()
    headers = {"Cookie": f"{COOKIE}={cookie_value(TOKEN)}"}
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(
            f"{server.url}/web-ui/ws?width=%C2%B2&height=30", headers=headers
        ) as ws:
            for message in BAD_MESSAGES:
                await ws.send_str(message)
            await ws.send_str('["resize", {"width": 100000, "height": 40}]')  # clamped, not refused
            await ws.send_str('["ping", "after"]')
            while True:  # the UI's output comes too; the pong says the relay is still alive
                reply = await ws.receive(timeout=60)
                assert reply.type in (aiohttp.WSMsgType.TEXT, aiohttp.WSMsgType.BINARY), reply
                if reply.type == aiohttp.WSMsgType.TEXT and json.loads(reply.data) == ["pong", "after"]:
                    break
