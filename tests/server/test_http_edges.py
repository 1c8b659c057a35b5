"""Issue 10, part B: bad input gets a 4xx (never a 500), and the server's HTTP edges hold:
parser errors as JSON, HEAD without a body, streams that fail loudly, slow readers dropped,
half-sent requests timed out. Everything against a real server on a real port; raw sockets
where an HTTP client would refuse to send the request."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest

from tests.conftest import LiveServer, ready_trace
from tests.server.test_api_core import accelsim_dir, create_run, wait_for  # noqa: F401 (fixtures)

INT64_MAX = 2**63 - 1


@pytest.fixture
async def edges(make_server, accelsim_dir):  # noqa: F811
    server = await make_server(accelsim_dir=accelsim_dir)
    await server.store.put_trace(ready_trace())
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
        assert (await http.post(f"/api/sims/{sim_id}/logs", json={"seq": 0, "lines": ["real"]})).status_code == 204
        assert (await http.get(f"/api/sims/{sim_id}/log")).text == "real\n"


async def test_the_largest_seq_is_accepted(edges):
    async with edges.client() as http:
        _, sim_id = await one_sim(http)
        resp = await http.post(f"/api/sims/{sim_id}/logs", json={"seq": INT64_MAX, "lines": ["far ahead"]})
        assert resp.status_code == 204, resp.text


@pytest.mark.parametrize("exit_code", ["3", 3.0, 2**63, -(2**63) - 1])
async def test_a_heartbeat_exit_code_must_be_a_64_bit_integer(edges, exit_code):
    async with edges.client() as http:
        _, sim_id = await one_sim(http)
        resp = await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "failed", "exit_code": exit_code})
        assert resp.status_code == 422, resp.text
        assert [err["loc"] for err in resp.json()["detail"]] == [["body", "exit_code"]]
        ok = await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "failed", "exit_code": -(2**63)})
        assert ok.status_code == 200 and ok.json()["state"] == "failed"


async def test_an_overflowing_chunk_never_fails_the_good_chunks_posted_with_it(edges):
    async with edges.client() as http:
        run = await create_run(http, [{"gpu_config": "SM7_QV100", "count": 8}])
        sims = [s["id"] for s in run["sims"]]
        posts = [http.post(f"/api/sims/{sim_id}/logs", json={"seq": seq, "lines": [f"{sim_id} {seq}"]})
                 for seq in range(20) for sim_id in sims]
        bad = [http.post(f"/api/sims/{sims[0]}/logs", json={"seq": 2**64 + seq, "lines": ["overflow"]})
               for seq in range(5)]
        results = await asyncio.gather(*posts, *bad)
        assert [r.status_code for r in results[:len(posts)]] == [204] * len(posts)
        assert [r.status_code for r in results[len(posts):]] == [422] * len(bad)
        for sim_id in sims:
            log = (await http.get(f"/api/sims/{sim_id}/log")).text
            assert log == "".join(f"{sim_id} {seq}\n" for seq in range(20))


@pytest.mark.parametrize("count", ["2", 2.0, 2**63, True])
async def test_a_run_entry_count_must_be_an_integer(edges, count):
    async with edges.client() as http:
        resp = await http.post("/api/runs", json={"trace_id": "tinyformer-step-sm70",
                                                  "entries": [{"gpu_config": "SM7_QV100", "count": count}]})
        assert resp.status_code == 422, resp.text
        assert [err["loc"] for err in resp.json()["detail"]] == [["body", "entries", 0, "count"]]
        assert (await http.get("/api/runs")).json() == []


async def test_unknown_fields_in_a_new_run_are_refused_by_name(edges):
    async with edges.client() as http:
        resp = await http.post("/api/runs", json={
            "trace_id": "tinyformer-step-sm70", "dry_run": True,
            "entries": [{"gpu_config": "SM7_QV100", "count": 1, "priority": 9}],
        })
        assert resp.status_code == 422, resp.text
        detail = resp.json()["detail"]
        assert sorted(err["loc"] for err in detail) == [["body", "dry_run"], ["body", "entries", 0, "priority"]]
        assert {err["type"] for err in detail} == {"extra_forbidden"}
        assert (await http.get("/api/runs")).json() == []  # nothing launched


async def test_a_succeeded_heartbeat_with_an_error_is_refused(edges):
    async with edges.client() as http:
        _, sim_id = await one_sim(http)
        resp = await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "succeeded", "error": "boom"})
        assert resp.status_code == 422, resp.text
        assert resp.json()["detail"][0]["loc"] == ["body", "error"]
        assert "succeeded" in resp.json()["detail"][0]["msg"]
        run = (await http.get(f"/api/sims/{sim_id}/results")).json()
        assert run["sim"]["state"] in ("pending", "launching")  # unchanged
        failed = await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "failed", "error": "boom"})
        assert failed.status_code == 200 and failed.json()["state"] == "failed"
