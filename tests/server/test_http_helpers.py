"""Issue 10, part B: the pure pieces behind the HTTP edges, on their own: the subscriber's
bounds and the sentences for JSON and HTTP parser errors."""

from __future__ import annotations

import pytest
from aiohttp import http_exceptions

from cascade_server.api.bodies import json_error_detail
from cascade_server.api.errors import parse_error_detail
from cascade_server.events import Subscriber


async def test_a_subscriber_overflows_past_its_byte_bound_once():
    dropped: list[bool] = []
    sub = Subscriber(limit=2000, max_bytes=100, on_overflow=lambda: dropped.append(True))
    sub.push(b"a" * 60)
    sub.push(b"b" * 40)  # exactly at the bound: kept
    assert not sub.overflowed and sub.size == 100
    sub.push(b"c")
    assert sub.overflowed and dropped == [True] and sub.frames == [] and sub.size == 0
    sub.push(b"d")
    assert dropped == [True]  # told once


async def test_a_subscriber_always_takes_one_frame_however_big():
    sub = Subscriber(max_bytes=10)
    sub.push(b"x" * 1000)
    assert not sub.overflowed
    assert sub.drain() == [b"x" * 1000] and sub.size == 0
    sub.push(b"y" * 1000)  # drained in between: a reader that keeps up is never dropped
    assert not sub.overflowed


async def test_a_subscriber_still_overflows_past_2000_events():
    sub = Subscriber(limit=3)
    for _ in range(3):
        sub.push(b"e")
    assert not sub.overflowed
    sub.push(b"e")
    assert sub.overflowed


@pytest.mark.parametrize(
    "message,expected",
    [
        (
            "Invalid JSON: unexpected end of hex escape at line 1 column 27",
            "the \\u escape near line 1 column 27 is a lone UTF-16 surrogate",
        ),
        (
            "Invalid JSON: lone leading surrogate in hex escape at line 3 column 5",
            "the \\u escape near line 3 column 5 is a lone UTF-16 surrogate",
        ),
        (
            "Invalid JSON: invalid unicode code point at line 1 column 21",
            "it is not valid UTF-8 at line 1 column 21",
        ),
        (
            "Invalid JSON: EOF while parsing an object at line 1 column 9",
            "EOF while parsing an object at line 1 column 9",
        ),
    ],
)
def test_json_errors_say_what_is_wrong(message, expected):
    detail = json_error_detail(message)
    assert detail.startswith("request body is not valid JSON: ")
    assert expected in detail


@pytest.mark.parametrize(
    "exc,reason",
    [
        (http_exceptions.LineTooLong("GET /aaaa secret", "8190"), "too long"),
        (http_exceptions.InvalidURLError("/a\x00b secret"), "path"),
        (http_exceptions.BadHttpMethod("BR\x00KEN secret"), "method"),
        (
            http_exceptions.BadHttpMessage("Invalid header value char:\n\n  b'Authorization: Bearer secret'"),
            "header",
        ),
        (
            http_exceptions.TransferEncodingError("Not enough data for satisfy transfer length header."),
            "chunked",
        ),
        (ValueError("secret"), ""),
    ],
)
def test_parser_errors_are_named_without_quoting_the_request(exc, reason):
    detail = parse_error_detail(exc)
    assert detail.startswith("malformed HTTP request") and reason in detail
    assert "secret" not in detail
