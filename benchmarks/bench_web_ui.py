"""The UI in a browser: a real `cascade serve` (its own process, the sample run seeded) and N
browser tabs, each a websocket like the page's own (textual-serve's protocol), each driving its own
`cascade tui` process. Prints per tab the time to the first full Runs screen, the UI process's
memory, and, with every tab open and nothing happening, the UI processes' CPU and the bytes per
second the server sends to the browsers. Then closes the tabs and times until every UI process is
gone.

    python benchmarks/bench_web_ui.py [--tabs 4] [--idle-seconds 10] [--size 120x40]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import httpx
import pyte
from procstats import cpu_seconds, free_port, memory_mib  # benchmarks/procstats.py

TOKEN = "bench-token"


def ui_pids(server_pid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == server_pid and b"cascade_tui.cli\0tui" in cmdline:
            pids.append(int(entry.name))
    return pids


class Tab:
    def __init__(self, cols: int, rows: int) -> None:
        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.bytes = 0
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self.task: asyncio.Task | None = None

    async def open(self, session: aiohttp.ClientSession, url: str) -> float:
        started = time.monotonic()
        self.ws = await session.ws_connect(
            f"{url}/web-ui/ws?width={self.screen.columns}&height={self.screen.lines}"
        )
        self.task = asyncio.create_task(self.read())
        while "sample" not in "\n".join(self.screen.display):  # the sample run's row is drawn
            await asyncio.sleep(0.02)
        return time.monotonic() - started

    async def read(self) -> None:
        assert self.ws is not None
        async for message in self.ws:
            if message.type == aiohttp.WSMsgType.BINARY:
                self.bytes += len(message.data)
                self.stream.feed(message.data)

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self.task is not None:
            await self.task


async def bench(args: argparse.Namespace) -> None:
    cols, rows = (int(x) for x in args.size.split("x"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as data:
        env = {
            **os.environ,
            "CASCADE_DATA_DIR": data,
            "CASCADE_PORT": str(port),
            "CASCADE_TOKEN": TOKEN,
            "CASCADE_S3_PORT": str(free_port()),
            "CASCADE_WEB": "1",
        }
        server = subprocess.Popen(
            [sys.executable, "-m", "cascade_tui.cli", "serve"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            async with httpx.AsyncClient(base_url=url) as http:
                for _ in range(600):
                    try:
                        if (await http.get("/api/health")).status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    await asyncio.sleep(0.1)
            cookie = hmac.new(TOKEN.encode(), b"cascade web ui", hashlib.sha256).hexdigest()
            async with aiohttp.ClientSession(headers={"Cookie": f"cascade_web={cookie}"}) as session:
                tabs = [Tab(cols, rows) for _ in range(args.tabs)]
                for i, tab in enumerate(tabs):
                    seconds = await tab.open(session, url)
                    print(
                        f"tab {i + 1}: Runs screen drawn in {seconds:.2f} s ({tab.bytes / 1024:.0f} KB sent)"
                    )
                pids = ui_pids(server.pid)
                for pid in pids:
                    rss, peak = memory_mib(pid)
                    print(f"UI process {pid}: RSS {rss:.0f} MiB (peak {peak:.0f} MiB)")
                await asyncio.sleep(2)  # let the start settle
                cpu0 = {pid: cpu_seconds(pid) for pid in pids}
                server_cpu0, sent0, t0 = cpu_seconds(server.pid), sum(t.bytes for t in tabs), time.monotonic()
                await asyncio.sleep(args.idle_seconds)
                elapsed = time.monotonic() - t0
                ui_cpu = sum(cpu_seconds(pid) - cpu0[pid] for pid in pids) / elapsed / len(pids) * 100
                server_cpu = (cpu_seconds(server.pid) - server_cpu0) / elapsed * 100
                sent = (sum(t.bytes for t in tabs) - sent0) / elapsed / len(tabs)
                print(
                    f"idle, {len(tabs)} tabs open for {elapsed:.0f} s: {ui_cpu:.1f}% of a core per UI process, "
                    f"server {server_cpu:.1f}%, {sent / 1024:.2f} KB/s to each tab"
                )
                closed = time.monotonic()
                for tab in tabs:
                    await tab.close()
                while ui_pids(server.pid):
                    await asyncio.sleep(0.05)
                print(f"tabs closed: every UI process gone after {time.monotonic() - closed:.2f} s")
        finally:
            server.terminate()
            server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tabs", type=int, default=4)
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    parser.add_argument("--size", default="120x40")
    asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
