"""Issue 10, part B: bad input gets a 4xx (never a 500), and the server's HTTP edges hold:
parser errors as JSON, HEAD without a body, streams that fail loudly, slow readers dropped,
half-sent requests timed out. Everything against a real server on a real port; raw sockets
where an HTTP client would refuse to send the request."""

from __future__ import annotations

import asyncio
import json
import logging
import socket

import httpx
import pytest

from cascade_core.upload_rules import trace_id_problem
from cascade_server.appkeys import BROKER_KEY
from tests.conftest import TOKEN, LiveServer, ready_trace
from tests.helpers import create_run, post_run, recorded_log, wait_until
from tests.server.test_ingest_events import chunks, post_log
from tests.server.test_serve_cli import serve

INT64_MAX = 2**63 - 1
AUTH = f"Authorization: Bearer {TOKEN}\r\n".encode()


@pytest.fixture
async def edges(make_server, accelsim_dir):  # noqa: F811
    server = await make_server(accelsim_dir=accelsim_dir)
    await server.store.traces.put_trace(ready_trace())
    return server


async def one_sim(http: httpx.AsyncClient) -> tuple[str, str]:
    run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 1}])
    return run["id"], run["sims"][0]["id"]


# --- raw HTTP ---------------------------------------------------------------------------------


class Raw:
    """One TCP connection speaking bytes: for requests httpx will not send."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, server: LiveServer, rcvbuf: int | None = None) -> Raw:
        sock = socket.socket()
        if rcvbuf is not None:  # before connecting: a small window makes the server's sends block
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", server.settings.port))
        return cls(*await asyncio.open_connection(sock=sock))

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def response(self, head_only: bool = False) -> tuple[int, dict[str, str], bytes]:
        """The next response: status, headers (lower-case names) and its Content-Length body."""
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), 30)
        status_line, *lines = head.decode("latin-1").split("\r\n")[:-2]
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
        size = 0 if head_only else int(headers.get("content-length", 0))
        body = await asyncio.wait_for(self.reader.readexactly(size), 30)
        return int(status_line.split()[1]), headers, body

    async def closed_by_server(self, timeout: float = 30) -> bytes:
        """Everything left until the server closes the connection (a reset counts as closed)."""
        try:
            return await asyncio.wait_for(self.reader.read(), timeout)
        except ConnectionResetError:
            return b""

    def close(self) -> None:
        self.writer.close()


async def exchange(server: LiveServer, request: bytes) -> tuple[int, dict[str, str], bytes]:
    raw = await Raw.open(server)
    try:
        await raw.send(request)
        return await raw.response()
    finally:
        raw.close()


# --- numbers: ranges and strict types ---------------------------------------------------------


@pytest.mark.parametrize("seq", ["0", 0.0, True, 2**63, -1, 10**30])
async def test_a_log_chunk_seq_must_be_a_64_bit_integer(edges, seq):
    async with edges.client() as http:
        _, sim_id = await one_sim(http)
        resp = await http.post(f"/api/sims/{sim_id}/logs", json={"seq": seq, "lines": ["taken?"]})
        assert resp.status_code == 422, resp.text
        assert [err["loc"] for err in resp.json()["detail"]] == [["body", "seq"]]
        # nothing reached the store: slot 0 is still free for the real chunk 0
        assert (
            await http.post(f"/api/sims/{sim_id}/logs", json={"seq": 0, "lines": ["real"]})
        ).status_code == 204
        assert (await http.get(f"/api/sims/{sim_id}/log")).text == "real\n"


async def test_the_largest_seq_is_a_clear_refusal(edges):
    # Issue 19: a chunk this far past the one the sim's log waits for is refused (409) rather
    # than parked (see test_ingest_hostile_values.py); never a 500.
    async with edges.client() as http:
        _, sim_id = await one_sim(http)
        resp = await http.post(f"/api/sims/{sim_id}/logs", json={"seq": INT64_MAX, "lines": ["far ahead"]})
        assert resp.status_code == 409, resp.text
        assert resp.json()["detail"].startswith(f"seq {INT64_MAX} is {INT64_MAX} chunks past seq 0")


@pytest.mark.parametrize("exit_code", ["3", 3.0, 2**63, -(2**63) - 1])
async def test_a_heartbeat_exit_code_must_be_a_64_bit_integer(edges, exit_code):
    async with edges.client() as http:
        _, sim_id = await one_sim(http)
        resp = await http.post(
            f"/api/sims/{sim_id}/heartbeat", json={"state": "failed", "exit_code": exit_code}
        )
        assert resp.status_code == 422, resp.text
        assert [err["loc"] for err in resp.json()["detail"]] == [["body", "exit_code"]]
        ok = await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "failed", "exit_code": -(2**63)})
        assert ok.status_code == 200 and ok.json()["state"] == "failed"


async def test_an_overflowing_chunk_never_fails_the_good_chunks_posted_with_it(edges):
    async with edges.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 8}])
        sims = [s["id"] for s in run["sims"]]
        posts = [
            http.post(f"/api/sims/{sim_id}/logs", json={"seq": seq, "lines": [f"{sim_id} {seq}"]})
            for seq in range(20)
            for sim_id in sims
        ]
        bad = [
            http.post(f"/api/sims/{sims[0]}/logs", json={"seq": 2**64 + seq, "lines": ["overflow"]})
            for seq in range(5)
        ]
        results = await asyncio.gather(*posts, *bad)
        assert [r.status_code for r in results[: len(posts)]] == [204] * len(posts)
        assert [r.status_code for r in results[len(posts) :]] == [422] * len(bad)
        for sim_id in sims:
            log = (await http.get(f"/api/sims/{sim_id}/log")).text
            assert log == "".join(f"{sim_id} {seq}\n" for seq in range(20))


@pytest.mark.parametrize("count", ["2", 2.0, 2**63, True])
async def test_a_run_entry_count_must_be_an_integer(edges, count):
    async with edges.client() as http:
        resp = await http.post(
            "/api/runs",
            json={
                "trace_id": "tinyformer-step-sm70",
                "entries": [{"gpu_config": "SM7_QV100", "count": count}],
            },
        )
        assert resp.status_code == 422, resp.text
        assert [err["loc"] for err in resp.json()["detail"]] == [["body", "entries", 0, "count"]]
        assert (await http.get("/api/runs")).json() == []


async def test_unknown_fields_in_a_new_run_are_refused_by_name(edges):
    async with edges.client() as http:
        resp = await post_run(http, [{"gpu_config": "SM7_QV100", "count": 1, "priority": 9}], dry_run=True)
        assert resp.status_code == 422, resp.text
        detail = resp.json()["detail"]
        assert sorted(err["loc"] for err in detail) == [
            ["body", "dry_run"],
            ["body", "entries", 0, "priority"],
        ]
        assert {err["type"] for err in detail} == {"extra_forbidden"}
        assert (await http.get("/api/runs")).json() == []  # nothing launched


# --- auth with bytes that are not UTF-8 -------------------------------------------------------


async def test_a_bearer_token_that_is_not_utf8_is_401(edges):
    status, headers, body = await exchange(
        edges, b"GET /api/traces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \xff\xfe\r\n\r\n"
    )
    assert status == 401 and headers["www-authenticate"] == "Bearer"
    assert json.loads(body) == {"detail": "invalid token"}
    async with edges.client() as http:
        run_id, _ = await one_sim(http)
    async with edges.client(token=None) as http:
        resp = await http.get(f"/api/runs/{run_id}/events?token=%FF%FE")
        assert resp.status_code == 401 and resp.json() == {"detail": "invalid token"}


# --- HEAD on streamed routes ------------------------------------------------------------------


async def test_head_on_streamed_routes_sends_headers_only(edges):
    async with edges.client() as http:
        run_id, sim_id = await one_sim(http)
        await post_log(http, sim_id, [["line one", "line two"]])
        put = await http.put(f"/api/sims/{sim_id}/files/stats.csv", content=b"a,b\n1,2\n")
        assert put.status_code == 200
        for path in (
            f"/api/sims/{sim_id}/log",
            f"/api/runs/{run_id}/results",
            f"/api/sims/{sim_id}/files/stats.csv",
            f"/api/sims/{sim_id}/results",
            f"/api/runs/{run_id}/events",
        ):
            raw = await Raw.open(edges)
            try:
                # Two requests on one connection: the second answer comes straight after the
                # first one's headers, or the HEAD sent a body and the connection is out of step.
                await raw.send(
                    f"HEAD {path} HTTP/1.1\r\nHost: x\r\n".encode()
                    + AUTH
                    + b"\r\n"
                    + b"GET /api/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                )
                status, headers, _ = await raw.response(head_only=True)
                assert status == 200, path
                assert headers["content-type"].split(";")[0] in (
                    "text/plain",
                    "application/json",
                    "text/csv",
                    "text/event-stream",
                ), path
                rest = await raw.closed_by_server()
                assert rest.startswith(b"HTTP/1.1 200 OK\r\n"), (path, rest[:80])
                assert rest.endswith(b'"s3_endpoint": null, "s3_error": null}'), (path, rest[-80:])
            finally:
                raw.close()
        # and GET still sends the bodies
        assert (await http.get(f"/api/sims/{sim_id}/log")).text == "line one\nline two\n"
        assert (await http.get(f"/api/sims/{sim_id}/files/stats.csv")).content == b"a,b\n1,2\n"
        head = await http.head(f"/api/sims/{sim_id}/files/stats.csv")
        assert head.headers["content-length"] == "8"


async def test_head_on_the_events_of_an_unknown_run_is_404(edges):
    async with edges.client() as http:
        resp = await http.head("/api/runs/run-000000000000/events")
        assert resp.status_code == 404


# --- names ------------------------------------------------------------------------------------


def test_trace_ids_with_a_trailing_newline_are_refused():
    assert trace_id_problem("tinyformer\n") is not None
    assert trace_id_problem("tinyformer") is None


async def test_file_names_with_a_trailing_newline_are_refused(edges, caplog):
    async with edges.client() as http:
        _, sim_id = await one_sim(http)
        put = await http.put(f"/api/sims/{sim_id}/files/a.txt%0A", content=b"x")
        assert put.status_code == 422 and "must match" in put.json()["detail"]
        get = await http.get(f"/api/sims/{sim_id}/files/a.txt%0A")
        assert get.status_code == 422
        assert (await http.get(f"/api/sims/{sim_id}/files")).json() == []
    assert "a.txt\n" not in caplog.text


# --- aiohttp's own parser errors --------------------------------------------------------------


@pytest.mark.parametrize(
    "request_bytes,reason",
    [
        (b"GET /api/tra\x00ces HTTP/1.1\r\nHost: x\r\n\r\n", "path"),
        (b"GET /api/" + b"a" * 8200 + b" HTTP/1.1\r\nHost: x\r\n\r\n", "too long"),
        (
            b"GET /api/traces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + TOKEN.encode()
            + b"\x00x\r\n\r\n",
            "header",
        ),
        (
            b"GET /api/traces HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"p" * 9000 + b"\r\n" + AUTH + b"\r\n",
            "too long",
        ),
        (b"BR\x00KEN / HTTP/1.1\r\n\r\n", "method"),
    ],
)
async def test_parser_errors_are_json_and_never_log_the_request(edges, caplog, request_bytes, reason):
    caplog.set_level(logging.DEBUG)
    status, headers, body = await exchange(edges, request_bytes)
    assert status == 400
    assert headers["content-type"].startswith("application/json")
    detail = json.loads(body)["detail"]
    assert detail.startswith("malformed HTTP request") and reason in detail
    assert TOKEN not in detail and "\x00" not in detail
    assert TOKEN not in caplog.text
    assert "Traceback" not in caplog.text


async def test_a_malformed_chunked_body_is_400(edges):
    async with edges.client() as http:
        _, sim_id = await one_sim(http)
    status, _, body = await exchange(
        edges,
        f"POST /api/sims/{sim_id}/logs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n".encode()
        + AUTH
        + b'Transfer-Encoding: chunked\r\n\r\n5\r\n{"seq\r\nzz\r\n',
    )
    assert status == 400
    assert json.loads(body)["detail"].startswith("malformed HTTP request")


# --- JSON that is not Unicode -----------------------------------------------------------------


@pytest.mark.parametrize("line", [r'"half \ud800 pair"', r'"\udc00"', r'"\ud800\ud800"'])
async def test_a_lone_surrogate_in_a_log_line_is_400_saying_so(edges, line):
    async with edges.client() as http:
        _, sim_id = await one_sim(http)
        resp = await http.post(
            f"/api/sims/{sim_id}/logs",
            headers={"Content-Type": "application/json"},
            content=('{"seq": 0, "lines": [' + line + "]}").encode(),
        )
        assert resp.status_code == 400
        detail = resp.json()["detail"]
        assert "lone UTF-16 surrogate" in detail and "line 1 column" in detail
        assert "hex escape" not in detail
        paired = await http.post(
            f"/api/sims/{sim_id}/logs",
            headers={"Content-Type": "application/json"},
            content=rb'{"seq": 0, "lines": ["\ud83d\ude00 ok"]}',
        )
        assert paired.status_code == 204
        assert (await http.get(f"/api/sims/{sim_id}/log")).text == "\U0001f600 ok\n"


async def test_a_body_that_is_not_utf8_is_400_saying_so(edges):
    async with edges.client() as http:
        _, sim_id = await one_sim(http)
        resp = await http.post(
            f"/api/sims/{sim_id}/logs",
            headers={"Content-Type": "application/json"},
            content=b'{"seq": 0, "lines": ["\xff"]}',
        )
        assert resp.status_code == 400 and "not valid UTF-8" in resp.json()["detail"]


# --- streams that fail after the status went out ----------------------------------------------


async def corrupt(server: LiveServer, sql: str, *args) -> None:
    """Fault injection: damage stored data the way a bad disk would, through the real database."""
    await server.store.db.w.execute(sql, args)
    await server.store.db.w.commit()


async def assert_cut_off(server: LiveServer, path: str) -> None:
    """The status went out as 200, then the connection was dropped: no end-of-body chunk, and no
    error response written into the middle of the body."""
    raw = await Raw.open(server)
    try:
        await raw.send(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n".encode() + AUTH + b"\r\n")
        status, headers, _ = await raw.response(head_only=True)
        body = await raw.closed_by_server()
    finally:
        raw.close()
    assert status == 200 and headers["transfer-encoding"] == "chunked"
    assert b"HTTP/1.1" not in body, body[-300:]
    assert not body.endswith(b"0\r\n\r\n"), "the body ended as if complete"
    async with server.client() as http:  # what an HTTP client makes of it: an error, not a short file
        with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
            await http.get(path)


async def test_a_log_that_fails_mid_stream_is_never_a_short_success(edges, caplog):
    async with edges.client() as http:
        _, sim_id = await one_sim(http)
        await post_log(http, sim_id, [[f"line {seq}"] for seq in range(200)])
    # (A damaged blob is read as a line saying so; a value of another type fails the read.)
    await corrupt(edges, "UPDATE log_chunks SET data = 'not a blob' WHERE sim_id = ? AND seq = 150", sim_id)
    await assert_cut_off(edges, f"/api/sims/{sim_id}/log")
    assert "connection aborted" in caplog.text


async def test_results_that_fail_mid_stream_are_never_a_short_success(edges):
    async with edges.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 2}])
        for sim in run["sims"]:
            await post_log(http, sim["id"], chunks(recorded_log("SM7_QV100"), 2000))
        whole = await http.get(f"/api/runs/{run['id']}/results")
        assert whole.status_code == 200 and len(whole.json()["sims"]) == 2
        second = sorted(s["id"] for s in run["sims"])[1]
    await corrupt(edges, "UPDATE kernels SET stats = x'00' WHERE sim_id = ? AND kernel_index = 3", second)
    await assert_cut_off(edges, f"/api/runs/{run['id']}/results")


# --- event-stream subscribers that stop reading -----------------------------------------------


async def stalled_subscriber(server: LiveServer, run_id: str) -> Raw:
    """An SSE client that connects, then never reads a byte."""
    raw = await Raw.open(server, rcvbuf=4096)
    await raw.send(f"GET /api/runs/{run_id}/events HTTP/1.1\r\nHost: x\r\n".encode() + AUTH + b"\r\n")
    broker = server.app[BROKER_KEY]

    async def subscribed():
        return broker.subscriber_count(run_id) == 1

    await wait_until(subscribed)
    return raw


async def flood_until_dropped(
    server: LiveServer, http: httpx.AsyncClient, run_id: str, sim_id: str, max_chunks: int
) -> int:
    """Post 64 KB log chunks until the stalled subscriber is gone; how many it took."""
    broker = server.app[BROKER_KEY]
    lines = ["x" * 1023] * 64
    for seq in range(max_chunks):
        resp = await http.post(f"/api/sims/{sim_id}/logs", json={"seq": seq, "lines": lines})
        assert resp.status_code == 204
        if broker.subscriber_count(run_id) == 0:
            return seq + 1
    return max_chunks


async def test_a_subscriber_that_stops_reading_is_dropped_past_the_byte_bound(make_server, accelsim_dir):  # noqa: F811
    # far fewer than 2,000 events (two per chunk), but megabytes a client does not read
    server = await make_server(
        accelsim_dir=accelsim_dir, sse_max_buffer_bytes=1024 * 1024, sse_send_timeout_s=600
    )
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run_id, sim_id = await one_sim(http)
        raw = await stalled_subscriber(server, run_id)
        try:
            posted = await flood_until_dropped(server, http, run_id, sim_id, max_chunks=300)
            assert server.app[BROKER_KEY].subscriber_count(run_id) == 0, "never dropped"
            assert posted < 300
            await raw.closed_by_server()  # the connection is gone, not left flushing
        finally:
            raw.close()
        # a reader that keeps up is not affected: a fresh stream starts with a snapshot
        async with http.stream("GET", f"/api/runs/{run_id}/events") as resp:
            first = await anext(resp.aiter_lines())
            assert json.loads(first.removeprefix("data: "))["type"] == "snapshot"


async def test_a_subscriber_that_stops_reading_is_dropped_past_the_send_timeout(make_server, accelsim_dir):  # noqa: F811
    server = await make_server(
        accelsim_dir=accelsim_dir, sse_max_buffer_bytes=1 << 40, sse_send_timeout_s=0.5
    )
    await server.store.traces.put_trace(ready_trace())
    broker = server.app[BROKER_KEY]
    async with server.client() as http:
        run_id, sim_id = await one_sim(http)
        raw = await stalled_subscriber(server, run_id)
        try:
            # enough to fill both kernel buffers, then nothing more: only the time bound can act
            await flood_until_dropped(server, http, run_id, sim_id, max_chunks=150)

            async def dropped():
                return broker.subscriber_count(run_id) == 0

            await wait_until(dropped, timeout=30)
            await raw.closed_by_server()
        finally:
            raw.close()


# --- half-sent requests -----------------------------------------------------------------------


async def test_half_sent_request_headers_are_closed_after_the_header_timeout(make_server):
    server = await make_server(header_timeout_s=0.5)
    conns = [await Raw.open(server) for _ in range(50)]
    try:
        for n, raw in enumerate(conns):
            await raw.send(b"GET /api/health HTTP/1.1\r\nHost: x\r\n" if n % 2 else b"GE")
        left = await asyncio.gather(*(raw.closed_by_server() for raw in conns))
        assert left == [b""] * len(conns)
    finally:
        for raw in conns:
            raw.close()


async def test_an_idle_keep_alive_connection_is_closed_after_the_header_timeout(make_server):
    server = await make_server(header_timeout_s=0.5)
    raw = await Raw.open(server)
    try:
        await raw.send(b"GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n")
        status, _, _ = await raw.response()
        assert status == 200
        assert await raw.closed_by_server() == b""
    finally:
        raw.close()


@pytest.mark.parametrize(
    "method,path,content_type",
    [
        ("POST", "logs", "application/json"),
        ("PUT", "files/big.bin", "application/octet-stream"),
    ],
)
async def test_a_body_that_stops_arriving_is_408(make_server, accelsim_dir, method, path, content_type):  # noqa: F811
    server = await make_server(accelsim_dir=accelsim_dir, body_timeout_s=0.5)
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        _, sim_id = await one_sim(http)
    raw = await Raw.open(server)
    try:
        await raw.send(
            f"{method} /api/sims/{sim_id}/{path} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\n"
            "Content-Length: 1000\r\n".encode()
            + AUTH
            + b'\r\n{"seq": 0, "lines": ['
        )
        status, headers, body = await raw.response()
        assert status == 408
        assert headers["connection"].lower() == "close"
        assert "stopped arriving" in json.loads(body)["detail"]
    finally:
        raw.close()
    async with server.client() as http:
        assert (await http.get(f"/api/sims/{sim_id}/files")).json() == []
        assert (await http.get(f"/api/sims/{sim_id}/log")).text == ""


# --- the real `cascade serve` process ---------------------------------------------------------


async def test_cascade_serve_answers_a_broken_header_as_json_and_never_logs_its_token(tmp_path):
    proc = serve(tmp_path / "data", CASCADE_TOKEN="serve-token-4f9a1c")
    try:
        await proc.start()
        with socket.create_connection(("127.0.0.1", proc.port), timeout=30) as sock:
            sock.sendall(
                b"GET /api/traces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer serve-token-4f9a1c\x00\r\n\r\n"
            )
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.") and b" 400 " in head.split(b"\r\n")[0]
        assert json.loads(body) == {
            "detail": "malformed HTTP request: a header name or value holds a character headers may not hold"
        }
    finally:
        await proc.stop()
    log = proc.logged()
    assert "refused a request from 127.0.0.1" in log
    assert "serve-token-4f9a1c" not in log and "Traceback" not in log
