"""One route's section, from its `route_docs.ROUTE_DOCS` entry: what it does, who may call it, its
path and query parameters, its body, what it returns and its own errors. The HTTP API reference
(api_reference, with links to its types) and the agent prompt (agent_prompt, type names alone)
write every route the same way from it. Pure."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, get_args, get_origin

from pydantic import BaseModel

from .agent_prompt_types import field_line
from .middlewares import OPEN_PATHS, TOKEN_IN_QUERY_ROUTES
from .route_docs import PATH_PARAMS, ROUTE_DOCS, RouteDoc

# Who may call a route, in the route's section (the reference's table has its short words).
AUTH_WORDS = {
    "none": "none",
    "token": "bearer token",
    "token or query": "bearer token, or the token as `?token=` (a browser's `EventSource` sends no headers)",
}
_PARAM = re.compile(r"(?:([\w-]+)/)?\{(\w+)\}")

# How a section names a type: the reference links it, the prompt names it.
TypeName = Callable[[Any], str]


def auth(path: str, name: str | None) -> str:
    """Who may call a route (`name`: its name in the route table), by the auth middleware's rules."""
    if path in OPEN_PATHS or not path.startswith("/api/"):
        return "none"
    return "token or query" if name in TOKEN_IN_QUERY_ROUTES else "token"


def plain_name(model: Any) -> str:
    return f"`{model.__name__}`"


def doc_of(method: str, path: str) -> RouteDoc:
    doc = ROUTE_DOCS.get((method, path))
    if doc is None:
        raise ValueError(f"{method} {path} has no entry in route_docs.ROUTE_DOCS")
    return doc


def with_article(model: Any, name: TypeName) -> str:
    if get_origin(model) is list:
        return f"a list of {name(get_args(model)[0])}"
    return f"{'an' if model.__name__[0] in 'AEIOU' else 'a'} {name(model)}"


def _query_lines(query: type[BaseModel]) -> list[str]:
    if not query.model_fields:
        return ["- Query: none; any parameter is a `422`."]
    lines = ["- Query parameters (unknown ones are ignored):"]
    lines += [f"    {field_line(query, name)}" for name in query.model_fields]
    return lines


def _returns(doc: RouteDoc, name: TypeName) -> str:
    if doc.status == 204:
        return "- Returns: `204`, no body."
    what = with_article(doc.response, name) if doc.response is not None else doc.returns
    if not what:
        raise ValueError("a route that answers with a body says what it is (`response` or `returns`)")
    return f"- Returns: `{doc.status}` with {what}."


def route_section(method: str, path: str, how: str, name: TypeName = plain_name, heading: str = "") -> str:
    """The route's section: `heading` (the reference's `### \\`GET /path\\``), what it does, then
    one line each for who calls it, its parameters, body, answer and errors."""
    doc = doc_of(method, path)
    lines = [heading or f"### {method} {path}", "", f"{doc.summary} {doc.details}".strip(), ""]
    if doc.simulator_only:
        lines.append("- Called by: simulators (`cascade worker`).")
    lines.append(f"- Auth: {AUTH_WORDS[how]}.")
    for before, param in _PARAM.findall(path):
        note = PATH_PARAMS.get(f"{before}/{{{param}}}") or PATH_PARAMS.get(param)
        if note is None:
            raise ValueError(
                f"path parameter {param!r} of {method} {path} has no route_docs.PATH_PARAMS entry"
            )
        lines.append(f"- Path parameter `{param}` (str): {note}")
    if doc.query is not None:
        lines += _query_lines(doc.query)
    if isinstance(doc.body, str):
        lines.append(f"- Body: {doc.body}.")
    elif doc.body is not None:
        lines.append(f"- Body: {name(doc.body)}, JSON.")
    lines.append(_returns(doc, name))
    lines += [f"- `{status}`: {when}" for status, when in doc.errors]
    return "\n".join(lines) + "\n"
