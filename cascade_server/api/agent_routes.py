"""The agent prompt, served without a token outside /api/ (it holds the URL, never the token)."""

from __future__ import annotations

from aiohttp import web

from ..agent_prompt import prompt_text, skill_text
from ..appkeys import SETTINGS_KEY

routes = web.RouteTableDef()
MARKDOWN = "text/markdown"


def app_url(request: web.Request) -> str:
    """The URL the agent should use: CASCADE_PUBLIC_URL when set, else the one this request came
    in on (through an SSH tunnel or a proxy that is what the client can reach)."""
    public = request.app[SETTINGS_KEY].public_url
    return public.rstrip("/") if public else f"{request.scheme}://{request.host}"


@routes.get("/agent-prompt.md")
async def agent_prompt(request: web.Request) -> web.Response:
    return web.Response(text=prompt_text(app_url(request)), content_type=MARKDOWN)


@routes.get("/cascade-skill/SKILL.md")
async def agent_skill(request: web.Request) -> web.Response:
    return web.Response(text=skill_text(app_url(request)), content_type=MARKDOWN)
