"""The API's error shape: `{"detail": ...}` with a status, and what aiohttp's own parse errors
say (never a byte of the request). Domain errors are mapped to it in middlewares.py."""

from __future__ import annotations

from typing import Any

from aiohttp import http_exceptions, web

from . import strict_json

JSON_TYPE = "application/json"


class ApiError(Exception):
    """An error the API reports as `{"detail": ...}` with `status`."""

    def __init__(self, status: int, detail: Any, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status, self.detail, self.headers = status, detail, headers or {}


def error_response(status: int, detail: Any, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        status=status,
        body=strict_json.dumps({"detail": detail}),
        content_type=JSON_TYPE,
        headers=headers,
    )


# What each of aiohttp's parser errors means, in words that never quote the request.
_PARSE_ERRORS: tuple[tuple[type[Exception], str], ...] = (
    (http_exceptions.LineTooLong, "the request line or a header is too long"),
    (
        http_exceptions.InvalidURLError,
        "the request path is not a valid URL (a control character or a bad escape)",
    ),
    (http_exceptions.BadHttpMethod, "the method is not a valid HTTP method"),
    (http_exceptions.InvalidHeader, "a header name or value holds a character headers may not hold"),
    (http_exceptions.BadStatusLine, "the request line is not METHOD PATH HTTP/1.x"),
    (http_exceptions.TransferEncodingError, "the chunked body is malformed"),
    (http_exceptions.ContentLengthError, "the body does not match its Content-Length"),
    (http_exceptions.ContentEncodingError, "the body cannot be decompressed as its Content-Encoding says"),
)


def parse_error_detail(exc: BaseException | None) -> str:
    """A sentence for a request aiohttp could not parse; never a byte of the request itself."""
    for kind, reason in _PARSE_ERRORS:
        if isinstance(exc, kind):
            return f"malformed HTTP request: {reason}"
    if isinstance(exc, http_exceptions.BadHttpMessage) and "header" in str(exc.message).lower():
        return "malformed HTTP request: a header name or value holds a character headers may not hold"
    return "malformed HTTP request"
