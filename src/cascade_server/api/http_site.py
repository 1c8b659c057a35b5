"""The aiohttp runner Cascade serves with: requests aiohttp's own parser refuses get the API's
JSON error shape, and their log line never holds what the client sent.

aiohttp answers a request it cannot parse (a NUL in the path or a header, an 8 KB request line)
itself, before any middleware runs: text/plain, echoing the offending line, and logged at ERROR
with a traceback that holds the whole header (the token, for `Authorization`). It has no option
for that, so the runner's server makes request handlers with their own `handle_error`.
"""

from __future__ import annotations

import logging

from aiohttp import http_exceptions, web
from aiohttp.web_protocol import RequestHandler, RequestPayloadError

from .errors import error_response, parse_error_detail

log = logging.getLogger(__name__)


class ApiRequestHandler(RequestHandler):
    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if request.writer.output_size > 0:  # the status is out: only the connection can say it failed
            raise ConnectionError("response already started; cannot send an error")
        if status >= 500:
            # Only aiohttp's own failures get here (the errors middleware answers the handlers'):
            # a bug to trace, with a traceback like the middleware's, not a request to quote.
            log.error("internal error in aiohttp", exc_info=exc)
            detail = "internal server error"
        else:
            detail = parse_error_detail(exc)
            # One line, the exception's class and our sentence: its message quotes the request.
            level = logging.DEBUG if isinstance(exc, http_exceptions.BadHttpMethod) else logging.WARNING
            log.log(
                level,
                "refused a request from %s: %s (%s)",
                request.remote,
                detail,
                type(exc).__name__ if exc else "unknown",
            )
        response = error_response(status, detail)
        response.force_close()
        return response

    def log_exception(self, *args, **kwargs) -> None:
        # After a body broke while arriving (a corrupt gzip body) was answered with a 400, aiohttp
        # reads on to drain the connection and meets the same error: not a bug to trace.
        if isinstance(kwargs.get("exc_info"), RequestPayloadError):
            log.debug("closed a connection whose request body broke while arriving")
            return
        super().log_exception(*args, **kwargs)


class ApiServer(web.Server):
    def __call__(self) -> RequestHandler:
        return ApiRequestHandler(self, loop=self._loop, **self._kwargs)


class ApiRunner(web.AppRunner):
    """`web.AppRunner` whose connections answer parser errors as JSON (see the module doc)."""

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        # The same server, making ApiRequestHandlers: aiohttp takes no handler class to use.
        server.__class__ = ApiServer
        return server
