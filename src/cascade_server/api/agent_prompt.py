"""Cascade's agent prompt: one Markdown source (`agent_prompt.md`, shipped as package data) served
as `/agent-prompt.md`, as a skill at `/cascade-skill/SKILL.md`, and printed by
`cascade agent-prompt`, with the app's URL filled in (never its token). Its API table, states and
types are generated from the routes and the models (agent_prompt_routes, agent_prompt_types), and
each route's parameters, answer and errors from the entries the HTTP API reference is written from
(route_docs, route_sections), so the prompt always describes the server it comes from."""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Iterable
from importlib import resources

from cascade_core.cli_usage import OneLineErrorParser
from cascade_core.setting_errors import url_problem

from .agent_prompt_routes import api_table, routes_section, table_routes
from .agent_prompt_types import states_section, types_section

URL_MARK = "{{APP_URL}}"
SHELL_URL_MARK = "{{APP_URL_SHELL}}"  # the URL inside a shell command: shell-quoted
DEFAULT_URL = "http://127.0.0.1:8000"
SKILL_NAME = "cascade"
SKILL_DESCRIPTION = (
    "Drive a Cascade app over its HTTP API: check GPU workload traces, launch Accel-Sim runs on "
    "the GPU configs that match, watch them, and report simulated time, MAPE against real "
    "timing, step timelines and failures, telling stand-in (replayed) numbers from real ones."
)


def prompt_text(app_url: str, routes: Iterable[tuple[str, str]] | None = None) -> str:
    """The prompt as Markdown, for an app at `app_url` serving `routes` ((method, path) pairs;
    the route table the app is built from when None)."""
    source = resources.files(__package__).joinpath("agent_prompt.md").read_text(encoding="utf-8")
    url = app_url.rstrip("/")
    served = table_routes() if routes is None else list(routes)
    sections = {
        SHELL_URL_MARK: shlex.quote(url),
        URL_MARK: url,
        "{{API_TABLE}}": api_table(served),
        "{{ROUTES}}": routes_section(served),
        "{{STATES}}": states_section(),
        "{{TYPES}}": types_section(),
    }
    for mark, text in sections.items():
        source = source.replace(mark, text)
    return source


def skill_text(app_url: str, routes: Iterable[tuple[str, str]] | None = None) -> str:
    """The same prompt as a skill: name and description frontmatter, then the prompt. The
    description is a JSON string, which YAML reads as a quoted scalar whatever it holds."""
    return (
        f"---\nname: {SKILL_NAME}\ndescription: {json.dumps(SKILL_DESCRIPTION)}\n---\n\n"
        f"{prompt_text(app_url, routes)}"
    )


def main(argv: list[str]) -> int:
    parser = OneLineErrorParser(
        prog="cascade agent-prompt",
        description="Print the prompt that lets an AI agent work this Cascade app (paste it into "
        "the agent, or save it where the agent reads instructions). A running server serves the "
        "same text at /agent-prompt.md and /cascade-skill/SKILL.md.",
    )
    parser.add_argument("--url", help=f"the app's URL to fill in (CASCADE_URL; default {DEFAULT_URL})")
    parser.add_argument(
        "--skill", action="store_true", help="print it as SKILL.md, with name and description"
    )
    args = parser.parse_args(argv)
    url = args.url or os.environ.get("CASCADE_URL") or DEFAULT_URL
    if problem := url_problem(url):
        parser.error(f"--url / CASCADE_URL: {problem}")
    print(skill_text(url) if args.skill else prompt_text(url), end="")
    return 0
