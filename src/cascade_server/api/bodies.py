"""Request and response bodies: typed JSON in and out, bodies read with limits and timeouts,
streamed responses. Errors leave as `errors.ApiError`."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterable, AsyncIterator, Mapping, Sequence
from typing import Any, TypeVar, get_origin

from aiohttp import web
from pydantic import BaseModel, ValidationError

from cascade_core.models import FILE_NAME_PATTERN
from cascade_core.quoting import clipped

from ..appkeys import SETTINGS_KEY
from .errors import JSON_TYPE, ApiError

M = TypeVar("M", bound=BaseModel)

log = logging.getLogger(__name__)
_JSON_POSITION = re.compile(r" at line \d+ column \d+$")
_FILE_NAME = re.compile(FILE_NAME_PATTERN)


def validation_detail(exc: ValidationError, prefix: tuple[str, ...] = ("body",)) -> list[dict[str, Any]]:
    return [
        {
            # a dict key in the path (an option name) may be any length: cut, like quoted input
            "loc": [*prefix, *(clipped(part) if isinstance(part, str) else part for part in err["loc"])],
            "msg": err["msg"],
            "type": err["type"],
        }
        for err in exc.errors(include_url=False, include_context=False, include_input=False)
    ]


def ok(
    model: BaseModel | Sequence[BaseModel] | None, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    if model is None:
        return web.Response(status=204)
    if isinstance(model, BaseModel):
        body = model.model_dump_json().encode()
    else:
        body = b"[" + b",".join(m.model_dump_json().encode() for m in model) + b"]"
    return web.Response(status=status, body=body, content_type=JSON_TYPE, headers=headers or None)


def check_file_name(name: str) -> None:
    """A sim file's name from the path (uploads and downloads): 422 unless it is one the spec allows."""
    if not _FILE_NAME.fullmatch(name):  # fullmatch: `$` alone lets a trailing newline through
        raise ApiError(422, f"file name {name!r} must match {FILE_NAME_PATTERN}")


def read_query(request: web.Request, model: type[M]) -> M:
    """Parse and validate the query string: 422 with a list (`loc` starts with "query") for bad
    values or unknown parameters. A list field takes repeated parameters or commas
    (`?state=failed&state=partial` or `?state=failed,partial`)."""
    values: dict[str, Any] = {}
    for name in request.query:
        field = model.model_fields.get(name)
        raw = request.query.getall(name)
        if field is not None and get_origin(field.annotation) is list:
            values[name] = [part for item in raw for part in item.split(",") if part]
        else:
            values[name] = raw[-1]
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise ApiError(422, validation_detail(exc, prefix=("query",))) from None


def json_error_detail(message: str) -> str:
    """pydantic's message for malformed JSON, in words a client can act on."""
    reason = message.removeprefix("Invalid JSON: ")
    match = _JSON_POSITION.search(reason)
    where = match.group(0) if match else ""
    # jiter says "unexpected end of hex escape" or "lone leading surrogate in hex escape" for
    # both halves of a broken pair: name the actual problem.
    if "hex escape" in reason:
        near = where.replace(" at ", " near ", 1)
        return (
            f"request body is not valid JSON: the \\u escape{near} is a lone UTF-16 surrogate "
            "(\\ud800-\\udfff without its other half), which is not a Unicode character; send the "
            "text as UTF-8, replacing what cannot be decoded"
        )
    if "invalid unicode code point" in reason:
        return f"request body is not valid JSON: it is not valid UTF-8{where}"
    return f"request body is not valid JSON: {reason}"


async def body_blocks(request: web.Request) -> AsyncIterator[bytes]:
    """The request body as it arrives: 408 when the client goes silent for body_timeout_s
    mid-body, so a half-sent request cannot hold its connection for good."""
    idle_s = request.app[SETTINGS_KEY].body_timeout_s
    content = request.content
    while True:
        # What has arrived already needs no timer (a small body is usually all there is).
        block = content.read_nowait()
        if not block:
            if content.at_eof():
                return
            try:
                async with asyncio.timeout(idle_s):
                    block = await content.readany()
            except TimeoutError:
                raise ApiError(408, f"the request body stopped arriving: nothing for {idle_s:g} s") from None
            if not block:
                return
        yield block


async def read_body(request: web.Request, limit: int | None = None) -> bytes:
    """The whole body, 413 past `limit` (aiohttp's client_max_size by default, like
    `request.read()`), 408 on silence."""
    limit = limit or request.app[SETTINGS_KEY].max_json_bytes
    body = bytearray()
    async for block in body_blocks(request):
        body += block
        if len(body) > limit:
            raise ApiError(413, f"request body is too large (limit {limit} bytes)")
    return bytes(body)


async def stream_body(
    request: web.Request, response: web.StreamResponse, blocks: AsyncIterable[bytes]
) -> web.StreamResponse:
    """Send `response`'s headers, then `blocks` as its body (none for HEAD).

    A failure once the status is out must not end the body cleanly: the client would take the
    cut-off body for the whole of it. The connection is aborted instead, which the client sees
    as a broken transfer (an incomplete chunked body or a short Content-Length).
    """
    await response.prepare(request)
    if request.method == "HEAD":  # headers only: a body would desync a keep-alive client
        await response.write_eof()
        return response
    try:
        async for block in blocks:
            await response.write(block)
    except (ConnectionError, asyncio.CancelledError):
        raise
    except Exception:
        log.exception(
            "%s %r failed after its status was sent: connection aborted", request.method, request.path
        )
        if request.transport is not None:
            request.transport.abort()
        raise ConnectionResetError("response aborted mid-body") from None
    await response.write_eof()
    return response


async def read_model(request: web.Request, model: type[M]) -> M:
    """Parse and validate a JSON body: 415 for another content type, 400 for malformed JSON,
    413 over the size limit (aiohttp's client_max_size), 422 with a list for invalid fields."""
    if request.content_type != JSON_TYPE:
        raise ApiError(415, f"expected a JSON body (Content-Type: {JSON_TYPE}), got {request.content_type!r}")
    body = await read_body(request)
    try:
        parsed = model.model_validate_json(body)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        if errors and errors[0]["type"] == "json_invalid":
            raise ApiError(400, json_error_detail(errors[0]["msg"])) from None
        if errors and all(not err["loc"] for err in errors) and errors[0]["type"] == "model_type":
            raise ApiError(
                422, [{"loc": ["body"], "msg": "body must be a JSON object", "type": "model_type"}]
            )
        raise ApiError(422, validation_detail(exc)) from None
    if (key := duplicate_key(body)) is not None:
        # The parser keeps the last of a repeated key and drops the rest without a word (a run
        # entry's `options` given twice, the second empty, ran without them): refused instead.
        msg = f"key {clipped(key)!r} appears twice in one object: send each key once"
        raise ApiError(422, [{"loc": ["body"], "msg": msg, "type": "duplicate_key"}])
    return parsed


class _DuplicateKey(Exception):
    pass


def _refuse_repeats(pairs: list[tuple[str, Any]]) -> None:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise _DuplicateKey(key)
        seen.add(key)


def duplicate_key(body: bytes) -> str | None:
    """The first key of `body` (JSON the model accepted) that an object of it repeats, or None.
    A second parse: the model's parser has no such check. Each object is dropped as soon as its
    keys are checked, so it costs little beyond the parse itself."""
    try:
        json.loads(body, object_pairs_hook=_refuse_repeats)
    except _DuplicateKey as exc:
        return str(exc.args[0])
    except (ValueError, RecursionError):  # what the model's parser took and this one does not
        return None
    return None
