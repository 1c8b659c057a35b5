"""The terminal UI in a browser (on by default; `--no-web` turns it off): every path outside /api/ serves a page
running textual-serve's xterm.js client, and each page's websocket drives its own `cascade tui`
process on this host, stopped when the tab goes. The page asks for the app's token first (unless
CASCADE_NO_AUTH=1) and keeps a keyed hash of it, never the token, in an HttpOnly cookie."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import shlex
import sys
from html import escape
from pathlib import Path
from urllib.parse import urlsplit

import textual_serve
from aiohttp import WSMsgType, web
from textual_serve.app_service import AppService
from textual_serve.download_manager import DownloadManager

from .api.bodies import read_body
from .api.errors import ApiError
from .api.middlewares import AUTHENTICATED
from .appkeys import SETTINGS_KEY
from .settings import Settings, token_hint
from .web_input import MAX_FORM_BYTES, FormError, bounded_int, login_token, terminal_size, websocket_message

PAGES = Path(__file__).resolve().parent / "web"
# textual-serve's own client files: textual.js (xterm.js), xterm.css and the Roboto Mono fonts.
CLIENT_STATIC = Path(textual_serve.__file__).resolve().parent / "static"
COOKIE = "cascade_web"
STOP_TIMEOUT_S = 10.0  # for a UI process to quit after its tab went, before it is killed


class OpenTabs:
    """The open tabs' sockets, closed on shutdown."""

    def __init__(self) -> None:
        self.sockets: set[web.WebSocketResponse] = set()


TABS_KEY = web.AppKey("web_ui_tabs", OpenTabs)


def cookie_value(token: str) -> str:
    """What the browser keeps: proves it was given the token without holding it."""
    return hmac.new(token.encode(), b"cascade web ui", hashlib.sha256).hexdigest()


def authorized(request: web.Request) -> bool:
    settings = request.app[SETTINGS_KEY]
    if settings.no_auth:
        return True
    given = request.cookies.get(COOKIE, "")
    # surrogateescape: a cookie of bytes that are not UTF-8 simply does not match
    if not hmac.compare_digest(
        given.encode("utf-8", "surrogateescape"), cookie_value(settings.token or "").encode()
    ):
        return False
    request[AUTHENTICATED] = True
    return True


def page(name: str, **values: str) -> str:
    text = (PAGES / name).read_text(encoding="utf-8")
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    return text


def html(text: str, status: int = 200) -> web.Response:
    # no-store: the page is the same for every path, and must not outlive a changed token
    return web.Response(
        text=text, status=status, content_type="text/html", headers={"Cache-Control": "no-store"}
    )


async def index(request: web.Request) -> web.Response:
    if not authorized(request):
        return html(page("token.html", message="", where=escape(token_hint(request.app[SETTINGS_KEY]))))
    if (full := sessions_full(request)) is not None:
        return html(f"<!DOCTYPE html><title>Cascade</title><p>{full}</p>", status=503)
    size = bounded_int(request.query.get("fontsize"), 8, 48, 16)  # ?fontsize=N, as textual-serve's page takes
    return html(page("terminal.html", font_size=str(size)))


async def login(request: web.Request) -> web.Response:
    settings = request.app[SETTINGS_KEY]
    body = await read_body(request, limit=MAX_FORM_BYTES)
    try:
        given = login_token(body, request.content_type, request.charset)
    except FormError as exc:
        raise ApiError(400, str(exc)) from None
    if not settings.no_auth and not hmac.compare_digest(given.encode(), (settings.token or "").encode()):
        refused = "That token was refused. Check it and try again."
        return html(page("token.html", message=refused, where=escape(token_hint(settings))), status=401)
    response = web.Response(status=303, headers={"Location": "/"})
    response.set_cookie(
        COOKIE, cookie_value(settings.token or ""), httponly=True, samesite="Strict", path="/"
    )
    return response


class TuiService(AppService):
    """One `cascade tui` process for one browser tab, pointed at this server. The token travels in
    the process's environment, never on its command line."""

    def __init__(self, settings: Settings, **kwargs) -> None:
        command = "exec " + shlex.join([sys.executable, "-m", "cascade_tui.cli", "tui"])
        super().__init__(command, **kwargs)
        self.settings = settings

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        env = super()._build_environment(width, height)
        env["CASCADE_URL"] = local_url(self.settings)
        env.pop("CASCADE_TOKEN", None)
        if self.settings.token and not self.settings.no_auth:
            env["CASCADE_TOKEN"] = self.settings.token
        return env

    async def run(self) -> None:
        """Relay the process's output; when it ends for any reason (`q`, a crash), end the tab's
        session too, so the page says so instead of waiting for ever."""
        try:
            await super().run()
        finally:
            with contextlib.suppress(ConnectionError, RuntimeError):
                await self.remote_close()

    async def stop(self) -> None:
        """Ask the UI to quit; kill it if it has not within STOP_TIMEOUT_S."""
        try:
            await asyncio.wait_for(super().stop(), STOP_TIMEOUT_S)
        except (TimeoutError, ConnectionError, RuntimeError):
            pass
        finally:
            process = self._process
            if process is not None and process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()


def local_url(settings: Settings) -> str:
    """This server as seen from its own host (CASCADE_PUBLIC_URL may only work from elsewhere)."""
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
    return f"http://[{host}]:{settings.port}" if ":" in host else f"http://{host}:{settings.port}"


def same_origin(request: web.Request) -> bool:
    """A websocket from a page of another site would carry our cookie: refuse it."""
    origin = request.headers.get("Origin")
    return origin is None or urlsplit(origin).netloc == request.host


def size_from(request: web.Request, name: str, default: int) -> int:
    return bounded_int(request.query.get(name), 10, 1000, default)


def sessions_full(request: web.Request) -> str | None:
    """Why no other tab can open now (each tab is a UI process on this host), or None."""
    limit = request.app[SETTINGS_KEY].web_max_sessions
    if len(request.app[TABS_KEY].sockets) < limit:
        return None
    return (
        f"The web UI already has {limit} open sessions (CASCADE_WEB_MAX_SESSIONS): "
        "close another tab, then reload this one."
    )


async def terminal_socket(request: web.Request) -> web.StreamResponse:
    if not authorized(request):
        raise ApiError(401, "the web UI needs the app's token: open / and enter it")
    if not same_origin(request):
        raise ApiError(403, "websocket from another origin")
    if (full := sessions_full(request)) is not None:
        raise ApiError(503, full)
    sockets = request.app[TABS_KEY].sockets
    websocket = web.WebSocketResponse(heartbeat=15)
    sockets.add(websocket)  # before the first await: two tabs at once cannot both take the last place
    try:
        await websocket.prepare(request)
    except BaseException:
        sockets.discard(websocket)
        raise
    service = TuiService(
        request.app[SETTINGS_KEY],
        write_bytes=websocket.send_bytes,
        write_str=websocket.send_str,
        close=websocket.close,
        download_manager=DownloadManager(),
    )
    try:
        await service.start(size_from(request, "width", 80), size_from(request, "height", 24))
        await relay(websocket, service)
    finally:
        sockets.discard(websocket)
        await service.stop()
    return websocket


async def relay(websocket: web.WebSocketResponse, service: AppService) -> None:
    """Browser -> UI process: keys and mouse as stdin, resizes, focus; answers pings."""
    async for message in websocket:
        if message.type != WSMsgType.TEXT:
            continue
        parsed = websocket_message(message.data)
        if parsed is None:
            continue
        kind, data = parsed
        if kind == "stdin":
            await service.send_bytes(str(data).encode("utf-8", "surrogateescape"))
        elif kind == "resize" and (size := terminal_size(data)) is not None:
            await service.set_terminal_size(*size)
        elif kind == "ping":
            await websocket.send_json(["pong", data])
        elif kind == "blur":
            await service.blur()
        elif kind == "focus":
            await service.focus()


async def close_sockets(app: web.Application) -> None:
    """On shutdown: close every tab's socket, so each handler stops its UI process."""
    for websocket in list(app[TABS_KEY].sockets):
        await websocket.close()


def add_web_ui(app: web.Application) -> None:
    """Register the web UI; last, since its page answers every GET outside /api/."""
    app[TABS_KEY] = OpenTabs()
    app.on_shutdown.append(close_sockets)
    app.router.add_get("/web-ui/ws", terminal_socket)
    app.router.add_post("/web-ui/login", login)
    app.router.add_static("/web-ui/static", CLIENT_STATIC)
    app.router.add_get(r"/{path:(?!api/).*}", index)
