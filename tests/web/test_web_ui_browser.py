"""The web UI in a real headless Chromium (Debian's `chromium`, driven by Playwright's client over
CDP; Playwright downloads no browser here). What the terminal shows is read by replaying the bytes
the page's websocket received into a terminal emulator (pyte), since xterm.js draws on a canvas;
a screenshot is saved next to the test's tmp files for a person to look at."""

from __future__ import annotations

import json
import os
import shutil
from urllib.parse import parse_qs, urlsplit

import httpx
import pyte
import pytest

from tests.conftest import TOKEN, LiveServer, ready_trace
from tests.helpers import wait_until
from tests.web.uiprocs import ui_processes

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# The flags that work on these machines (no sandbox as root; no background calls to Google).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM), reason="Chromium is not installed (.ci/run installs it)"
    ),
]


class BrowserTerminal:
    """The screen of the page's terminal, rebuilt from the websocket's frames at the page's size."""

    def __init__(self) -> None:
        self.screen = pyte.Screen(80, 24)
        self.stream = pyte.ByteStream(self.screen)
        self.socket_url: str | None = None

    def attach(self, ws) -> None:
        self.socket_url = ws.url
        query = parse_qs(urlsplit(ws.url).query)
        self.screen.resize(int(query["height"][0]), int(query["width"][0]))
        ws.on("framereceived", self.received)
        ws.on("framesent", self.sent)

    def received(self, payload) -> None:
        if isinstance(payload, bytes):
            self.stream.feed(payload)

    def sent(self, payload) -> None:
        if isinstance(payload, str) and payload.startswith('["resize"'):
            size = json.loads(payload)[1]
            self.screen.resize(size["height"], size["width"])

    def text(self) -> str:
        return "\n".join(self.screen.display)


async def test_browser_page_runs_the_ui_offline_behind_the_token(make_server, tmp_path):
    from playwright.async_api import async_playwright

    server: LiveServer = await make_server(web=True)
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        resp = await http.post(
            "/api/runs",
            json={"trace_id": "tinyformer-step-sm70", "entries": [{"gpu_config": "SM7_QV100", "count": 2}]},
        )
        assert resp.status_code == 201
        run_id = resp.json()["id"]

    requests: list[str] = []
    terminal = BrowserTerminal()
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 800})
            page.on("request", lambda request: requests.append(request.url))
            page.on("websocket", terminal.attach)

            # The page asks for the token; a wrong one is refused and opens nothing.
            await page.goto(server.url + "/")
            await page.fill("#token", "not-the-token")
            async with page.expect_response(lambda r: r.url.endswith("/web-ui/login")) as refused:
                await page.click("#open")
            assert (await refused.value).status == 401
            assert "refused" in await page.inner_text("#refused")
            assert terminal.socket_url is None and ui_processes() == []

            # The right one opens the UI: the Runs screen, our run on it.
            await page.fill("#token", TOKEN)
            await page.click("#open")
            await wait_until(
                lambda: "Runs" in terminal.text() and run_id[:10] in terminal.text(), timeout=120
            )
            assert len(ui_processes()) == 1
            assert f"Cascade · {run_id}" not in terminal.text()  # not on the run yet

            # A key press opens the run (the newest run is the highlighted row). No click first:
            # the page gives the terminal the keyboard focus as soon as it loads.
            await page.keyboard.press("Enter")
            await wait_until(
                lambda: f"Cascade · {run_id}" in terminal.text() and "LIVE" in terminal.text(), timeout=120
            )
            await page.screenshot(path=str(tmp_path / "web-ui-run.png"))
            (tmp_path / "web-ui-run.txt").write_text(terminal.text())

            # Closing the tab stops its UI process.
            await page.close()
            await wait_until(lambda: ui_processes() == [], timeout=30)
        finally:
            await browser.close()

    # Fully offline: every request (page, scripts, styles, fonts, websocket) went to this server.
    assert requests and terminal.socket_url
    origin = urlsplit(server.url).netloc
    assert sorted({urlsplit(url).netloc for url in [*requests, terminal.socket_url]}) == [origin]
    assert any(url.endswith(".ttf") for url in requests)  # the font came from here too


async def test_browser_without_auth_opens_the_ui_at_once(make_server):
    from playwright.async_api import async_playwright

    server: LiveServer = await make_server(web=True, no_auth=True, token=None)
    terminal = BrowserTerminal()
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page()
            page.on("websocket", terminal.attach)
            await page.goto(server.url + "/")
            await wait_until(lambda: "Runs" in terminal.text(), timeout=120)
        finally:
            await browser.close()
    async with httpx.AsyncClient(base_url=server.url) as anonymous:
        assert (await anonymous.get("/api/runs")).status_code == 200
