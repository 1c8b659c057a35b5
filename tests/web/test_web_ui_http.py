"""The web UI's HTTP side (`cascade serve --web`): the token page, the cookie, the websocket's
checks and what stays JSON under /api/. The browser itself is in test_web_ui_browser.py."""

from __future__ import annotations

import aiohttp
import httpx
import pyte

from cascade_server.web_ui import COOKIE, cookie_value
from tests.conftest import TOKEN, LiveServer
from tests.helpers import wait_until
from tests.web.uiprocs import ui_processes

# A websocket handshake as a plain GET: the refusal's status and JSON body can be read.
UPGRADE = {
    "Upgrade": "websocket",
    "Connection": "Upgrade",
    "Sec-WebSocket-Version": "13",
    "Sec-WebSocket-Key": "x3JJHMbDL1EzLkh9GBhXDw==",
}


async def test_every_path_outside_api_serves_the_token_page_until_the_token_is_given(make_server):
    server: LiveServer = await make_server(web=True)
    async with httpx.AsyncClient(base_url=server.url) as browser:
        for path in ("/", "/runs/run-123", "/api"):
            resp = await browser.get(path)
            assert resp.status_code == 200 and 'name="token"' in resp.text, path
        unknown = await browser.get("/api/nope")  # /api/ stays the JSON API
        assert unknown.status_code == 404 and unknown.json() == {"detail": "Not Found"}
        assert (await browser.get("/agent-prompt.md")).headers["content-type"].startswith("text/markdown")

        refused = await browser.post("/web-ui/login", data={"token": "wrong"})
        assert refused.status_code == 401 and "refused" in refused.text and COOKIE not in browser.cookies

        accepted = await browser.post("/web-ui/login", data={"token": TOKEN})
        assert accepted.status_code == 303 and accepted.headers["location"] == "/"
        assert (
            "HttpOnly" in accepted.headers["set-cookie"]
            and "SameSite=Strict" in accepted.headers["set-cookie"]
        )
        assert browser.cookies[COOKIE] == cookie_value(TOKEN) and TOKEN not in accepted.headers["set-cookie"]
        page = await browser.get("/")
        assert 'id="terminal"' in page.text and "/web-ui/static/js/textual.js" in page.text
        assert "googleapis" not in page.text and "http://" not in page.text.replace("http://www.w3.org", "")
        assert (await browser.get("/web-ui/static/js/textual.js")).status_code == 200


async def test_the_websocket_needs_the_cookie_and_the_same_origin(make_server):
    server: LiveServer = await make_server(web=True)
    ws_url = f"{server.url}/web-ui/ws"
    async with aiohttp.ClientSession() as session:
        async with session.get(ws_url, headers=UPGRADE) as resp:
            assert resp.status == 401 and "token" in (await resp.json())["detail"]
        cookie = f"{COOKIE}={cookie_value(TOKEN)}"
        try:
            await session.ws_connect(ws_url, headers={"Origin": "http://evil.example", "Cookie": cookie})
            raise AssertionError("a cross-origin websocket was accepted")
        except aiohttp.WSServerHandshakeError as exc:
            assert exc.status == 403


async def test_without_auth_the_page_opens_the_ui_at_once(make_server):
    server: LiveServer = await make_server(web=True, no_auth=True, token=None)
    async with httpx.AsyncClient(base_url=server.url) as browser:
        page = await browser.get("/")
    assert 'id="terminal"' in page.text and 'name="token"' not in page.text


async def test_the_web_ui_is_served_by_default_behind_the_token(server: LiveServer):
    """Spec 001: paths outside /api/ serve the web UI."""
    async with httpx.AsyncClient(base_url=server.url) as browser:
        resp = await browser.get("/runs")
        assert resp.status_code == 200 and 'name="token"' in resp.text and 'id="terminal"' not in resp.text


async def test_without_web_there_is_no_page(make_server):
    server: LiveServer = await make_server(web=False)
    async with httpx.AsyncClient(base_url=server.url) as browser:
        assert (await browser.get("/")).status_code == 404


def test_serve_web_flag_and_variable(monkeypatch):
    from cascade_server.serve import build_settings, parse_args

    assert build_settings(parse_args([])).web is True
    assert build_settings(parse_args(["--no-web"])).web is False
    monkeypatch.setenv("CASCADE_WEB", "0")
    assert build_settings(parse_args([])).web is False
    assert build_settings(parse_args(["--web"])).web is True


async def test_browser_sessions_are_bounded_with_a_clear_503(make_server):
    server: LiveServer = await make_server(web_max_sessions=1)
    headers = {"Cookie": f"{COOKIE}={cookie_value(TOKEN)}"}
    ws_url = f"{server.url}/web-ui/ws"
    async with aiohttp.ClientSession() as session:
        first = await session.ws_connect(ws_url, headers=headers)
        try:
            await first.receive(timeout=60)  # the UI process is up and talking
            try:
                await session.ws_connect(ws_url, headers=headers)
                raise AssertionError("a session past the limit was accepted")
            except aiohttp.WSServerHandshakeError as exc:
                assert exc.status == 503
            async with session.get(ws_url, headers={**headers, **UPGRADE}) as resp:
                assert resp.status == 503
                assert "1 open sessions" in (await resp.json())["detail"]
            async with session.get(server.url + "/", headers=headers) as page:
                assert page.status == 503 and "CASCADE_WEB_MAX_SESSIONS" in await page.text()
        finally:
            await first.close()
        second = await wait_until(lambda: _try_connect(session, ws_url, headers))
        await second.close()


async def _try_connect(session, url, headers):
    try:
        return await session.ws_connect(url, headers=headers)
    except aiohttp.WSServerHandshakeError:
        return None


async def test_quitting_the_ui_ends_the_tab_session_and_its_process(make_server):
    server: LiveServer = await make_server(web=True)
    screen = pyte.Screen(100, 30)
    stream = pyte.ByteStream(screen)
    async with aiohttp.ClientSession(headers={"Cookie": f"{COOKIE}={cookie_value(TOKEN)}"}) as session:
        ws = await session.ws_connect(f"{server.url}/web-ui/ws?width=100&height=30")

        async def read_until(condition) -> aiohttp.WSMessage:
            while True:
                message = await ws.receive(timeout=60)
                if message.type == aiohttp.WSMsgType.BINARY:
                    stream.feed(message.data)
                if message.type != aiohttp.WSMsgType.BINARY or condition():
                    return message

        await read_until(lambda: "Runs" in "\n".join(screen.display))
        assert len(ui_processes()) == 1
        await ws.send_json(["stdin", "q"])
        last = await read_until(lambda: False)  # until the server closes the socket
        assert last.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
    await wait_until(lambda: ui_processes() == [], timeout=30)


async def test_a_ui_that_cannot_start_ends_the_tab_session(make_server, monkeypatch):
    monkeypatch.setenv("CASCADE_REFRESH_HZ", "99")  # `cascade tui` refuses it and exits at once
    server: LiveServer = await make_server(web=True)
    async with aiohttp.ClientSession(headers={"Cookie": f"{COOKIE}={cookie_value(TOKEN)}"}) as session:
        ws = await session.ws_connect(f"{server.url}/web-ui/ws")
        message = await ws.receive(timeout=60)
        while message.type == aiohttp.WSMsgType.BINARY:
            message = await ws.receive(timeout=60)
        assert message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)


async def test_the_token_page_says_where_this_servers_token_is(make_server, tmp_path):
    """Issue 32: the page names this server's token file (its data directory, not the default
    one), or CASCADE_TOKEN when the server was started with another token; `cascade serve`'s
    `web:` line says the same."""
    from cascade_server.settings import token_hint

    server: LiveServer = await make_server(web=True)
    async with httpx.AsyncClient(base_url=server.url) as browser:
        page = (await browser.get("/")).text
        assert "~/.local/share/cascade/token" not in page
        assert "the CASCADE_TOKEN the server was started with" in page  # its token is no file's
        token_file = server.settings.data_dir / "token"
        token_file.write_text(TOKEN + "\n")
        page = (await browser.get("/")).text
        assert f"<code>cat {token_file}</code>" in page or f"cat ~/{token_file.name}" in page
        refused = await browser.post("/web-ui/login", data={"token": "wrong"})
        assert str(token_file.parent.name) in refused.text  # said again beside the refusal
    assert token_hint(server.settings) == f"cat {token_file}"
