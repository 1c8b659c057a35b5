"""What a request to the Cascade API can fail with, each kind worded for an operator (`str()` is
what to show), and the title a notification gives it. Apart from the client (client.py) so that
screens and script commands that only tell failures apart need not load httpx."""

from __future__ import annotations


class ApiError(Exception):
    """A request failed; `str()` is what to show the operator."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Unreachable(ApiError):
    """No server answered at the URL."""


class Unauthorized(ApiError):
    """The server refused the token (401)."""


class NotCascade(ApiError):
    """Something answers at the URL, but not a Cascade server (another program on the port)."""


def error_title(exc: BaseException, default: str) -> str:
    """A notification's title for `exc`: what went wrong when its kind says so, else `default`."""
    if isinstance(exc, Unauthorized):
        return "Wrong or missing token"
    if isinstance(exc, Unreachable):
        return "Server not reachable"
    return default
