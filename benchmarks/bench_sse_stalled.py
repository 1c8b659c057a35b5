"""Event-stream clients that stop reading: 20 of them (a tiny receive window, never a read) and
one healthy reader subscribe to a run on a real `cascade serve`; one sim then posts 64 KB log
chunks. Prints how many stalled clients the server dropped and how soon, the server's memory,
and whether the healthy reader got every event.

    python benchmarks/bench_sse_stalled.py [--stalled 20] [--chunks 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from bench_ingest import REGISTER_TRACE, TOKEN  # benchmarks/bench_ingest.py
from procstats import free_port, memory_mib  # benchmarks/procstats.py

LINES = ["x" * 1023] * 64  # one 64 KB chunk


async def stalled_client(port: int, run_id: str) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    request = f"GET /api/runs/{run_id}/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
    await asyncio.get_running_loop().sock_sendall(sock, request.encode())
    return sock


def dropped(sock: socket.socket) -> bool:
    """True once the server has closed or reset the connection (reading what is left to see)."""
    sock.setblocking(True)
    sock.settimeout(0.2)
    try:
        while True:
            data = sock.recv(1 << 20)
            if not data:
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False  # still open: nothing more arrived, but no end either


async def healthy_reader(http: httpx.AsyncClient, run_id: str, logs: list[int], ready: asyncio.Event) -> None:
    async with http.stream("GET", f"/api/runs/{run_id}/events") as resp:
        async for line in resp.aiter_lines():
            if line.startswith("data: "):
                kind = json.loads(line[6:])["type"]
                if kind == "snapshot":
                    ready.set()
                elif kind == "log":
                    logs.append(1)


async def drive(port: int, server_pid: int, stalled: int, chunks: int) -> None:
    url = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
    ) as http:
        run = (
            await http.post(
                "/api/runs", json={"trace_id": "bench", "entries": [{"gpu_config": "SM7_QV100", "count": 1}]}
            )
        ).json()
        run_id, sim_id = run["id"], run["sims"][0]["id"]
        socks = [await stalled_client(port, run_id) for _ in range(stalled)]
        logs: list[int] = []
        ready = asyncio.Event()
        reader = asyncio.create_task(healthy_reader(http, run_id, logs, ready))
        await ready.wait()
        rss_before = memory_mib(server_pid)[0]
        started = time.monotonic()
        for seq in range(chunks):
            resp = await http.post(f"/api/sims/{sim_id}/logs", json={"seq": seq, "lines": LINES})
            resp.raise_for_status()
        posted_s = time.monotonic() - started
        rss_after = memory_mib(server_pid)[0]
        deadline = time.monotonic() + 60
        while len(logs) < chunks and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        reader.cancel()
        gone = sum(await asyncio.gather(*(asyncio.to_thread(dropped, s) for s in socks)))
        for s in socks:
            s.close()
    mb = chunks * 64 / 1024
    print(
        f"stalled clients: {stalled}, chunks: {chunks} x 64 KB ({mb:.1f} MB per subscriber) in {posted_s:.1f} s"
    )
    print(f"stalled clients dropped by the server: {gone} of {stalled}")
    print(
        f"server RSS: {rss_before:.0f} MiB before, {rss_after:.0f} MiB after the flood, "
        f"peak {memory_mib(server_pid)[1]:.0f} MiB"
    )
    print(f"healthy reader: {len(logs)} of {chunks} log events")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stalled", type=int, default=20)
    parser.add_argument("--chunks", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-c", REGISTER_TRACE, str(Path(tmp) / "cascade.db")], check=True)
        port = free_port()
        env = {
            **os.environ,
            "CASCADE_DATA_DIR": tmp,
            "CASCADE_PORT": str(port),
            "CASCADE_TOKEN": TOKEN,
            "CASCADE_LAUNCHER": "manual",
            "CASCADE_SAMPLES": "0",
            "CASCADE_S3_PORT": str(free_port()),
        }
        server = subprocess.Popen(
            [sys.executable, "-m", "cascade_tui.cli", "serve"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert server.stdout is not None
            while not server.stdout.readline().startswith("app:"):
                pass
            asyncio.run(drive(port, server.pid, args.stalled, args.chunks))
        finally:
            server.send_signal(signal.SIGINT)
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
