"""What a service or the storage refuses, in the server's own words; the HTTP layer maps each to
its status (api/middlewares.py), so nothing below it knows about HTTP. The message is the API's
`detail`."""

from __future__ import annotations


class NotFound(Exception):
    """An id names nothing (404)."""


class Conflict(Exception):
    """The change does not fit the current state (409)."""


class Invalid(Exception):
    """The request names something that cannot be used as asked (422)."""


class Unavailable(Exception):
    """The server cannot do it now, but may on a retry (503)."""
