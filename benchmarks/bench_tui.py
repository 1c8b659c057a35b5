"""The terminal UI under load: a real `cascade serve` (its own process), 256 simulated sims posting
recorded Accel-Sim logs and heartbeats as fast as the server takes them, and `cascade tui` showing
the run in a real pseudo-terminal. Prints the UI's CPU use and the bytes it writes to the terminal
per second (targets: under 25% of one core, under 20 KB/s), then its memory after 1 million log
lines stream into the log pane, and its CPU when idle.

    python benchmarks/bench_tui.py [--sims 256] [--seconds 20] [--log-lines 1000000] [--size 120x40]
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import gzip
import os
import pty
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

import httpx
from procstats import cpu_seconds, free_port, memory_mib  # benchmarks/procstats.py

ROOT = Path(__file__).resolve().parents[1]
RECORDINGS = ROOT / "samples" / "recordings"
SAMPLE_CONFIGS = ROOT / "samples" / "accelsim"
TOKEN = "bench-token"
CONFIGS = ["SM7_QV100", "SM7_GV100", "SM7_TITANV", "SM7_QV100_B"]  # sm_70; 64 sims each at most


def prepare(data_dir: Path) -> Path:
    """Four sm_70 GPU configs (the sample ones plus a copy) and a ready trace in the store."""
    accelsim = data_dir / "accelsim"
    shutil.copytree(SAMPLE_CONFIGS, accelsim)
    cfgs = accelsim / "gpu-simulator" / "gpgpu-sim" / "configs" / "tested-cfgs"
    shutil.copytree(cfgs / "SM7_QV100", cfgs / "SM7_QV100_B")
    code = f"""
import asyncio
from pathlib import Path
from cascade_server.storage import Store
from cascade_core.models import TraceDetail, utcnow

async def main():
    store = await Store(Path({str(data_dir / "cascade.db")!r})).open()
    now = utcnow()
    await store.traces.put_trace(TraceDetail(id="bench", state="ready", created_at=now, updated_at=now,
                                      trace_gpu_arch="sm_70", kernel_count=15,
                                      suggested_sim_config="SM7_QV100"))
    await store.close()
asyncio.run(main())
"""
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    return accelsim


class Terminal:
    """`cascade tui` in a pseudo-terminal of a given size; counts the bytes it writes."""

    def __init__(self, args: list[str], env: dict[str, str], size: tuple[int, int]) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cascade_tui.cli", "tui", *args],
            cwd=ROOT,
            env=env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            close_fds=True,
        )
        os.close(slave)
        self.master = master
        self.bytes = 0
        self.tail = b""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.bytes += len(data)
            self.tail = (self.tail + data)[-65536:]

    def wait_for(self, marker: bytes, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while marker not in self.tail:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise SystemExit(f"the UI never showed {marker!r}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGHUP)  # the terminal goes away
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        os.close(self.master)


async def simulate(
    http: httpx.AsyncClient,
    sim_id: str,
    lines: list[str],
    chunk: int,
    stop: asyncio.Event,
    total: int | None,
    counter: list[int],
) -> None:
    """One sim: a running heartbeat, then chunks of its recorded log (looped) as fast as the
    server commits them, with a heartbeat every 2 s, until `stop` or `total` lines."""
    (await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "running"})).raise_for_status()
    seq, pos, sent, last_beat = 0, 0, 0, time.monotonic()
    while not stop.is_set() and (total is None or sent < total):
        n = chunk if total is None else min(chunk, total - sent)
        part = [lines[(pos + i) % len(lines)] for i in range(n)]
        (await http.post(f"/api/sims/{sim_id}/logs", json={"seq": seq, "lines": part})).raise_for_status()
        seq, pos, sent = seq + 1, pos + n, sent + n
        counter[0] += n
        if time.monotonic() - last_beat > 2.0:
            await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "running"})
            last_beat = time.monotonic()


async def live_phase(url: str, env: dict[str, str], args: argparse.Namespace) -> None:
    logs = {
        c: gzip.decompress((RECORDINGS / f"{c.removesuffix('_B')}.log.gz").read_bytes()).decode().splitlines()
        for c in CONFIGS
    }
    limits = httpx.Limits(max_connections=args.sims + 8)
    async with httpx.AsyncClient(
        base_url=url, timeout=120, limits=limits, headers={"Authorization": f"Bearer {TOKEN}"}
    ) as http:
        per, extra = divmod(args.sims, len(CONFIGS))
        entries = [{"gpu_config": c, "count": per + (i < extra)} for i, c in enumerate(CONFIGS)]
        run = (
            (await http.post("/api/runs", json={"trace_id": "bench", "entries": entries}))
            .raise_for_status()
            .json()
        )
        term = Terminal(["--run", run["id"]], env, args.size)
        try:
            term.wait_for(b"LIVE")
            stop, counter = asyncio.Event(), [0]
            tasks = [
                asyncio.create_task(
                    simulate(http, s["id"], logs[s["gpu_config"]], args.chunk, stop, None, counter)
                )
                for s in run["sims"]
            ]
            await asyncio.sleep(args.warmup)
            cpu0, bytes0, lines0, t0 = cpu_seconds(term.proc.pid), term.bytes, counter[0], time.monotonic()
            await asyncio.sleep(args.seconds)
            cpu1, bytes1, lines1, t1 = cpu_seconds(term.proc.pid), term.bytes, counter[0], time.monotonic()
            stop.set()
            await asyncio.gather(*tasks)
            wall = t1 - t0
            print(
                f"live run: {len(run['sims'])} sims streaming at full speed for {wall:.1f} s "
                f"({(lines1 - lines0) / wall:,.0f} log lines/s committed, {args.chunk}-line chunks)"
            )
            print(f"  UI CPU: {(cpu1 - cpu0) / wall * 100:.1f}% of one core (target < 25%)")
            print(
                f"  UI output: {(bytes1 - bytes0) / wall / 1024:.1f} KB/s to the terminal "
                f"(target < 20 KB/s), terminal {args.size[0]}x{args.size[1]}"
            )
        finally:
            term.stop()


async def memory_phase(url: str, env: dict[str, str], args: argparse.Namespace) -> None:
    lines = gzip.decompress((RECORDINGS / "SM7_QV100.log.gz").read_bytes()).decode().splitlines()
    async with httpx.AsyncClient(
        base_url=url, timeout=120, headers={"Authorization": f"Bearer {TOKEN}"}
    ) as http:
        run = (
            (
                await http.post(
                    "/api/runs",
                    json={"trace_id": "bench", "entries": [{"gpu_config": "SM7_QV100", "count": 1}]},
                )
            )
            .raise_for_status()
            .json()
        )
        term = Terminal(["--run", run["id"]], env, args.size)
        try:
            term.wait_for(b"LIVE")
            rss_before, _ = memory_mib(term.proc.pid)
            counter = [0]
            start = time.monotonic()
            await simulate(http, run["sims"][0]["id"], lines, 2000, asyncio.Event(), args.log_lines, counter)
            posted = time.monotonic() - start
            # Wait for the UI to settle: no CPU used for 2 s in a row.
            last, still = cpu_seconds(term.proc.pid), 0.0
            while still < 2.0:
                await asyncio.sleep(0.5)
                now = cpu_seconds(term.proc.pid)
                still = still + 0.5 if now - last < 0.02 else 0.0
                last = now
            rss, peak = memory_mib(term.proc.pid)
            cpu0, t0 = cpu_seconds(term.proc.pid), time.monotonic()
            await asyncio.sleep(5)
            idle = (cpu_seconds(term.proc.pid) - cpu0) / (time.monotonic() - t0) * 100
            print(f"log pane: {counter[0]:,} lines streamed into the watched sim's pane in {posted:.1f} s")
            print(
                f"  UI memory: {rss:.0f} MiB RSS after them ({rss_before:.0f} MiB before, "
                f"peak {peak:.0f} MiB); the pane keeps the last {args.log_max_lines:,} lines"
            )
            print(f"  UI CPU when idle afterwards: {idle:.1f}% of one core")
        finally:
            term.stop()


def parse_size(text: str) -> tuple[int, int]:
    w, h = text.lower().split("x")
    return int(w), int(h)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=256)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--chunk", type=int, default=200, help="log lines per POST")
    parser.add_argument("--log-lines", type=int, default=1_000_000)
    parser.add_argument("--log-max-lines", type=int, default=200_000)
    parser.add_argument("--size", type=parse_size, default=(120, 40))
    args = parser.parse_args()
    if args.sims > 64 * len(CONFIGS):
        raise SystemExit(f"--sims at most {64 * len(CONFIGS)}")
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        accelsim = prepare(data_dir)
        port = free_port()
        base = {k: v for k, v in os.environ.items() if not k.startswith("CASCADE_")}
        server_env = {
            **base,
            "CASCADE_DATA_DIR": tmp,
            "CASCADE_PORT": str(port),
            "CASCADE_TOKEN": TOKEN,
            "CASCADE_LAUNCHER": "manual",
            "CASCADE_SAMPLES": "0",
            "CASCADE_ACCELSIM_DIR": str(accelsim),
            "CASCADE_S3_ENDPOINT": "http://127.0.0.1:1",
            "CASCADE_HEARTBEAT_TIMEOUT_S": "600",
        }
        server = subprocess.Popen(
            [sys.executable, "-m", "cascade_tui.cli", "serve"],
            cwd=ROOT,
            env=server_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        url = f"http://127.0.0.1:{port}"
        ui_env = {
            **base,
            "CASCADE_URL": url,
            "CASCADE_TOKEN": TOKEN,
            "TERM": "xterm-256color",
            "CASCADE_CONFIG": str(data_dir / "no-config.toml"),
            "CASCADE_LOG_MAX_LINES": str(args.log_max_lines),
            "CASCADE_DOWNLOAD_DIR": str(data_dir / "downloads"),
        }
        try:
            assert server.stdout is not None
            while not server.stdout.readline().startswith("app:"):
                if server.poll() is not None:
                    raise SystemExit("cascade serve did not start")
            asyncio.run(live_phase(url, ui_env, args))
            asyncio.run(memory_phase(url, ui_env, args))
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)


if __name__ == "__main__":
    main()
