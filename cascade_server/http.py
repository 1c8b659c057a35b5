"""Small helpers every handler uses: typed JSON in and out, and the API's error shape."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from aiohttp import web
from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)

JSON_TYPE = "application/json"


class ApiError(Exception):
    """An error the API reports as `{"detail": ...}` with `status`."""

    def __init__(self, status: int, detail: Any, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status, self.detail, self.headers = status, detail, headers or {}


def error_response(status: int, detail: Any, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        status=status, body=json.dumps({"detail": detail}).encode(), content_type=JSON_TYPE,
        headers=headers,
    )


def validation_detail(exc: ValidationError, prefix: tuple[str, ...] = ("body",)) -> list[dict[str, Any]]:
    return [
        {"loc": [*prefix, *err["loc"]], "msg": err["msg"], "type": err["type"]}
        for err in exc.errors(include_url=False, include_context=False, include_input=False)
    ]


def ok(model: BaseModel | Sequence[BaseModel] | None, status: int = 200,
       headers: Mapping[str, str] | None = None) -> web.Response:
    if model is None:
        return web.Response(status=204)
    if isinstance(model, BaseModel):
        body = model.model_dump_json().encode()
    else:
        body = b"[" + b",".join(m.model_dump_json().encode() for m in model) + b"]"
    return web.Response(status=status, body=body, content_type=JSON_TYPE, headers=headers or None)


async def read_model(request: web.Request, model: type[M]) -> M:
    """Parse and validate a JSON body: 415 for another content type, 400 for malformed JSON,
    413 over the size limit (aiohttp's client_max_size), 422 with a list for invalid fields."""
    if request.content_type != JSON_TYPE:
        raise ApiError(415, f"expected a JSON body (Content-Type: {JSON_TYPE}), got {request.content_type!r}")
    body = await request.read()
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        if errors and errors[0]["type"] == "json_invalid":
            raise ApiError(400, f"request body is not valid JSON: {errors[0]['msg']}") from None
        if errors and all(not err["loc"] for err in errors) and errors[0]["type"] == "model_type":
            raise ApiError(422, [{"loc": ["body"], "msg": "body must be a JSON object", "type": "model_type"}])
        raise ApiError(422, validation_detail(exc)) from None
