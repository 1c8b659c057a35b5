"""Cascade's agent prompt: one Markdown source (`agent_prompt.md`, shipped as package data) served
as `/agent-prompt.md`, as a skill at `/cascade-skill/SKILL.md`, and printed by
`cascade agent-prompt`, with the app's URL filled in (never its token)."""

from __future__ import annotations

import json
import os
from importlib import resources

from .shared.cli_usage import OneLineErrorParser

URL_MARK = "{{APP_URL}}"
DEFAULT_URL = "http://127.0.0.1:8000"
SKILL_NAME = "cascade"
SKILL_DESCRIPTION = (
    "Drive a Cascade app over its HTTP API: check GPU workload traces, launch Accel-Sim runs on "
    "the GPU configs that match, watch them, and report simulated time, MAPE against real "
    "timing, step timelines and failures, telling stand-in (replayed) numbers from real ones."
)


def prompt_text(app_url: str) -> str:
    """The prompt as Markdown, for an app at `app_url`."""
    source = resources.files(__package__).joinpath("agent_prompt.md").read_text(encoding="utf-8")
    return source.replace(URL_MARK, app_url.rstrip("/"))


def skill_text(app_url: str) -> str:
    """The same prompt as a skill: name and description frontmatter, then the prompt. The
    description is a JSON string, which YAML reads as a quoted scalar whatever it holds."""
    return f"---\nname: {SKILL_NAME}\ndescription: {json.dumps(SKILL_DESCRIPTION)}\n---\n\n{prompt_text(app_url)}"


def main(argv: list[str]) -> int:
    parser = OneLineErrorParser(
        prog="cascade agent-prompt",
        description="Print the prompt that lets an AI agent work this Cascade app (paste it into "
        "the agent, or save it where the agent reads instructions). A running server serves the "
        "same text at /agent-prompt.md and /cascade-skill/SKILL.md.",
    )
    parser.add_argument("--url", help=f"the app's URL to fill in (CASCADE_URL; default {DEFAULT_URL})")
    parser.add_argument("--skill", action="store_true", help="print it as SKILL.md, with name and description")
    args = parser.parse_args(argv)
    url = args.url or os.environ.get("CASCADE_URL") or DEFAULT_URL
    print(skill_text(url) if args.skill else prompt_text(url), end="")
    return 0
