"""The agent prompt's text: served without a token and with this server's URL, the same as
`cascade agent-prompt`, naming only routes and fields this server has."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import httpx
from aiohttp import web

from cascade_core import models
from cascade_server.api.agent_prompt import URL_MARK, prompt_text, skill_text
from cascade_server.api.agent_prompt_types import UNIONS
from tests.conftest import TOKEN, LiveServer


def api_table(prompt: str) -> list[tuple[str, str]]:
    """(method, path) of every row of the prompt's API table."""
    return re.findall(r"^\| (GET|POST|PUT|DELETE) \| `(/api/[^`]*)` \|", prompt, flags=re.M)


def route_exists(app: web.Application, method: str, path: str) -> bool:
    for resource in app.router.resources():
        if resource.canonical == path and any(route.method == method for route in resource):
            return True
    return False


async def test_prompt_and_skill_are_served_without_a_token_with_the_url_and_never_the_token(
    server: LiveServer,
):
    async with httpx.AsyncClient(base_url=server.url) as anonymous:
        prompt = await anonymous.get("/agent-prompt.md")
        skill = await anonymous.get("/cascade-skill/SKILL.md")
    for resp in (prompt, skill):
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/markdown")
        assert TOKEN not in resp.text and URL_MARK not in resp.text
        assert f"This app's is `{server.url}`" in resp.text
    assert prompt.text == prompt_text(server.url)
    front, body = skill.text.removeprefix("---\n").split("\n---\n\n", 1)
    fields = dict(line.split(": ", 1) for line in front.splitlines())
    assert fields["name"] == "cascade"
    assert "Cascade" in json.loads(fields["description"])  # a quoted scalar: valid YAML whatever it holds
    assert body == prompt.text


async def test_public_url_wins_over_the_request_host(make_server):
    server = await make_server(public_url="http://cascade.lab.example:8443/")
    async with httpx.AsyncClient(base_url=server.url) as anonymous:
        text = (await anonymous.get("/agent-prompt.md")).text
    assert "This app's is `http://cascade.lab.example:8443`" in text and server.url not in text


def test_cascade_agent_prompt_prints_the_same_text():
    out = subprocess.run(
        [sys.executable, "-m", "cascade_tui.cli", "agent-prompt", "--url", "http://10.1.2.3:8000"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == prompt_text("http://10.1.2.3:8000")
    skill = subprocess.run(
        [sys.executable, "-m", "cascade_tui.cli", "agent-prompt", "--skill"],
        capture_output=True,
        text=True,
        check=True,
        env={"CASCADE_URL": "http://h:1"},
    ).stdout
    assert skill == skill_text("http://h:1")


async def test_every_route_the_prompt_lists_exists_on_this_server(server: LiveServer):
    prompt = prompt_text(server.url)
    table = api_table(prompt)
    assert len(table) >= 23
    missing = [f"{m} {p}" for m, p in table if not route_exists(server.app, m, p)]
    assert missing == []
    # Every /api/ path named anywhere in the text is a route too (the simulator routes included).
    named = set(re.findall(r"`(?:(GET|POST|PUT|DELETE) )?(/api/[a-z{}_/-]+[a-z}])", prompt))
    assert [p for _, p in named if not any(r.canonical == p for r in server.app.router.resources())] == []


def test_the_types_section_names_only_fields_the_models_have():
    types = prompt_text("http://x").split("\n## Types\n", 1)[1]
    checked = 0
    for section in re.split(r"^### ", types, flags=re.M)[1:]:
        name, _, body = section.partition("\n")
        if name.strip() in UNIONS:
            continue  # what a union is one of (`RunEvent`): no fields of its own
        fields = getattr(models, name.strip()).model_fields
        for line in body.splitlines():
            if not line.startswith("- "):
                continue
            head = re.split(r":|\.$", re.sub(r"\([^)]*\)", "", line[2:]), maxsplit=1)[0]
            for field in re.findall(r"`(\w+)`", head):
                assert field in fields, f"{name.strip()} has no field {field!r}"
                checked += 1
    assert checked > 30


def test_the_prompt_names_this_servers_real_errors_and_the_stand_in_signs():
    prompt = prompt_text("http://x")
    errors = prompt.split("\n## Errors\n", 1)[1].split("\n## ", 1)[0]
    for status in ("400", "401", "403", "404", "405", "408", "409", "413", "415", "422", "502", "507"):
        assert f"- **{status}.**" in errors
    assert "`replay` is `true`" in prompt and "Stand-in numbers, not a simulation of this trace" in prompt
    assert "`has_real_timing`" in prompt and "/step-timelines" in prompt


def test_the_banner_the_prompt_quotes_is_the_one_the_ui_shows():
    import inspect

    from cascade_tui.views import run_rows  # the run screen's banner text

    quoted = re.search(r'banner "⚠ ([^"]+)"', prompt_text("http://x"))
    assert quoted and f"⚠ {quoted.group(1)}:" in inspect.getsource(run_rows)
