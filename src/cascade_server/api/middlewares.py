"""Auth and error middlewares."""

from __future__ import annotations

import hmac
import logging

from aiohttp import http_exceptions, web
from aiohttp.web_protocol import RequestPayloadError

from ..appkeys import SETTINGS_KEY
from ..domain_errors import Conflict, Invalid, NotFound, Unavailable
from ..faults import DISK_FULL_DETAIL, DISK_FULL_STATUS, is_disk_full
from .errors import ApiError, error_response, parse_error_detail

log = logging.getLogger(__name__)

OPEN_PATHS = frozenset({"/api/health"})
# Routes (by name) that take the token as `?token=` too, because a browser's EventSource cannot
# send headers.
TOKEN_IN_QUERY_ROUTES = frozenset({"run-events"})
# Set on a request that proved the token (or on any, with CASCADE_NO_AUTH): only those may make
# the server log a traceback.
AUTHENTICATED = web.RequestKey("cascade_authenticated", bool)
MAX_LOGGED_PATH = 120
BEARER = {"WWW-Authenticate": "Bearer"}


def _token_matches(given: str, expected: str) -> bool:
    # aiohttp decodes header bytes that are not UTF-8 (`Bearer \xff\xfe`) to lone surrogates;
    # surrogateescape turns them back into those bytes, which simply do not match.
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected.encode())


def _check_token(request: web.Request, expected: str) -> None:
    if request.match_info.route.name in TOKEN_IN_QUERY_ROUTES and "token" in request.query:
        if not _token_matches(request.query["token"], expected):
            raise ApiError(401, "invalid token", BEARER)
        return
    header = request.headers.get("Authorization")
    if header is None:
        raise ApiError(401, "missing Authorization header: send 'Authorization: Bearer <token>'", BEARER)
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(401, "malformed Authorization header: expected 'Bearer <token>'", BEARER)
    if not _token_matches(token.strip(), expected):
        raise ApiError(401, "invalid token", BEARER)


@web.middleware
async def errors_middleware(request: web.Request, handler):
    """Every error is JSON with `detail`; nothing unexpected leaks a traceback to the client."""
    try:
        return await handler(request)
    except ApiError as exc:
        response = error_response(exc.status, exc.detail, exc.headers)
        if exc.status == 408:
            response.force_close()  # the rest of that body is not coming: do not keep the connection
        return response
    except http_exceptions.HttpProcessingError as exc:  # a body aiohttp could not parse (bad chunking)
        return error_response(400, parse_error_detail(exc))
    except RequestPayloadError as exc:
        # The body broke while arriving (a corrupt gzip or deflate body, bad chunking): aiohttp
        # keeps the parser's error as the cause. The rest of it cannot be read: close.
        response = error_response(400, parse_error_detail(exc.__cause__))
        response.force_close()
        return response
    except NotFound as exc:
        return error_response(404, str(exc))
    except Conflict as exc:
        return error_response(409, str(exc))
    except Invalid as exc:
        return error_response(422, str(exc))
    except Unavailable as exc:
        return error_response(503, str(exc))
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        detail = exc.reason
        if exc.status == 413:
            detail = f"request body is too large (limit {request.app[SETTINGS_KEY].max_json_bytes} bytes)"
        return error_response(exc.status, detail, {k: v for k, v in exc.headers.items() if k == "Allow"})
    except ConnectionResetError:
        raise
    except Exception as exc:
        if is_disk_full(exc):  # one line, not a traceback per request while the disk stays full
            log.warning("%s %r: disk full (%s)", request.method, request.path, exc)
            return error_response(DISK_FULL_STATUS, DISK_FULL_DETAIL)
        if request.get(AUTHENTICATED):
            log.exception("unexpected error in %s %r", request.method, request.path)  # %r: no raw newline
        else:  # anyone can send these: one bounded line each, never a traceback to flood the log
            log.error(
                "unexpected error in %s %r (unauthenticated): %s",
                request.method[:16],
                request.path[:MAX_LOGGED_PATH],
                type(exc).__name__,
            )
        return error_response(500, "internal server error")


@web.middleware
async def auth_middleware(request: web.Request, handler):
    settings = request.app[SETTINGS_KEY]
    match = request.match_info
    if match.http_exception is not None:
        # Unknown /api/ paths are 404 {"detail": "Not Found"} before (and without) auth.
        raise match.http_exception
    if settings.no_auth:
        request[AUTHENTICATED] = True
        return await handler(request)
    if request.path in OPEN_PATHS or not request.path.startswith("/api/"):
        return await handler(request)
    _check_token(request, settings.token or "")
    request[AUTHENTICATED] = True
    return await handler(request)
