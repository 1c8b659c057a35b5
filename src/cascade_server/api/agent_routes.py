"""The agent prompt, served without a token outside /api/ (it holds the URL, never the token)."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from aiohttp import web

from cascade_core.setting_errors import host_port_ok

from ..appkeys import SETTINGS_KEY
from .agent_prompt import prompt_text, skill_text
from .agent_prompt_routes import app_routes

routes = web.RouteTableDef()
MARKDOWN = "text/markdown"


WILDCARD_HOSTS = ("0.0.0.0", "::", "")


def app_url(request: web.Request) -> str:
    """The URL the agent should use, and send its token to. CASCADE_PUBLIC_URL when set (checked
    at start); else the configured address. The request's Host only where it must be: a loopback
    one (an SSH tunnel's other end, on the client's own machine), or any when the server listens
    on every address and so knows no name of its own; and only a plain host and port, since the
    client writes it and the prompt puts it in commands an agent runs."""
    settings = request.app[SETTINGS_KEY]
    if settings.public_url:
        return settings.public_url.rstrip("/")
    host = request.headers.get("Host", "")
    if host_port_ok(host) and (_is_loopback(host) or settings.host in WILDCARD_HOSTS):
        return f"{request.scheme}://{host}"
    return settings.base_url


def _is_loopback(host_port: str) -> bool:
    name = urlsplit(f"//{host_port}").hostname or ""
    try:
        return name == "localhost" or ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@routes.get("/agent-prompt.md")
async def agent_prompt(request: web.Request) -> web.Response:
    return web.Response(text=prompt_text(app_url(request), app_routes(request.app)), content_type=MARKDOWN)


@routes.get("/cascade-skill/SKILL.md")
async def agent_skill(request: web.Request) -> web.Response:
    return web.Response(text=skill_text(app_url(request), app_routes(request.app)), content_type=MARKDOWN)
