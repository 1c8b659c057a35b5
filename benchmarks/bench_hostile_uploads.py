"""The hostile uploads of issue 19 against a real `cascade serve` (its own process, its embedded S3
endpoint): each is put in the bucket as an attacker would, the trace's outcome is awaited, and the
peak memory of the server process (and of its post-processor child) during that case is printed,
with what the server answered. Then `cascade timeline import` of a profile bomb, with its peak.

    python benchmarks/bench_hostile_uploads.py

Every case should end `failed` with a one-line error (or 4xx), the server under 300 MB.
"""

from __future__ import annotations

import gzip
import json
import lzma
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from procstats import free_port  # benchmarks/procstats.py

ROOT = Path(__file__).resolve().parents[1]
SM70 = ROOT / "samples" / "accelsim-traces" / "tinyformer-step-sm70"
TOKEN = "bench-token"
MiB = 1024 * 1024
RAW_HEADER = (
    b"-kernel name = k\n-kernel id = 1\n-grid dim = (64,1,1)\n-block dim = (32,1,1)\n"
    b"-shmem = 0\n-nregs = 8\n-binary version = 70\n-cuda stream id = 0\n"
    b"-shmem base_addr = 0x0\n-local mem base_addr = 0x0\n-nvbit version = 1.5.5\n"
    b"-accelsim tracer version = 5\n-enable lineinfo = 0\n\n#traces format = ...\n"
)


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def children(pid: int) -> list[int]:
    """Cascade's own child processes (the post-processor), not the rclone S3 endpoint."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
        if int(rest[1]) == pid and name != "rclone":
            found.append(int(entry.name))
    return found


@contextmanager
def peak_rss(pid: int) -> Iterator[dict[str, int]]:
    """Samples the RSS of `pid` and of its children every 10 ms while the block runs."""
    peaks = {"server": 0, "child": 0}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peaks["server"] = max(peaks["server"], rss_kib(pid))
            for child in children(pid):
                peaks["child"] = max(peaks["child"], rss_kib(child))
            time.sleep(0.01)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield peaks
    finally:
        stop.set()
        thread.join()


def xz_repeat(byte: bytes, total: int) -> bytes:
    """`total` copies of `byte`, xz-compressed as concatenated streams of 1 MiB (made at once)."""
    return lzma.compress(byte * MiB, preset=1) * (total // MiB)


def gzip_repeat(byte: bytes, total: int) -> bytes:
    return gzip.compress(byte * MiB, mtime=0) * (total // MiB)


def metadata(trace_id: str, files: dict[str, bytes], **fields: object) -> bytes:
    listed = [{"key": f"accelsim-traces/{trace_id}/{rel}", "bytes": len(body)} for rel, body in files.items()]
    return json.dumps({"status": "ok", "trace_gpu_arch": "sm_70", **fields, "files": listed}).encode()


def complete(trace_id: str, files: dict[str, bytes], **fields: object) -> dict[str, bytes]:
    return {**files, "metadata.json": metadata(trace_id, files, **fields)}


def case_xz_header_line(tid: str) -> dict[str, bytes]:
    """156 KB: a processed .traceg.xz whose first header line is 1 GiB long."""
    body = (
        lzma.compress(b"-kernel name = ") + xz_repeat(b"k", 1024 * MiB) + lzma.compress(b"\n-kernel id = 1\n")
    )
    return complete(tid, {"traces/kernelslist.g": b"kernel-1.traceg.xz\n", "traces/kernel-1.traceg.xz": body})


def case_block_dim(tid: str) -> dict[str, bytes]:
    """10 KB: a raw trace claiming 1024x1024-thread blocks, one instruction in each of 200."""
    header = RAW_HEADER.replace(b"(32,1,1)", b"(1024,1024,1)").replace(b"(64,1,1)", b"(65535,1,1)")
    lines = b"".join(b"%d 0 0 0 0000 ffffffff 1 R1 NOP 0 0\n" % x for x in range(200))
    return complete(tid, {"traces/kernelslist": b"kernel-1.trace\n", "traces/kernel-1.trace": header + lines})


def case_nul_gzip(tid: str) -> dict[str, bytes]:
    """2 MB: a raw kernel trace that is a gzip of 2 GiB of NULs (no newline)."""
    return complete(
        tid,
        {
            "traces/kernelslist": b"kernel-1.trace.gz\n",
            "traces/kernel-1.trace.gz": gzip_repeat(b"\0", 2048 * MiB),
        },
    )


def case_big_metadata(tid: str) -> dict[str, bytes]:
    """A 20 MB metadata.json (its layers)."""
    return {"metadata.json": json.dumps({"layers": ["x" * 1000] * 20_000}).encode()}


def case_many_files(tid: str) -> dict[str, bytes]:
    """A metadata.json listing 300,000 files that never arrive."""
    files = [{"key": f"accelsim-traces/{tid}/f{i}", "bytes": 1} for i in range(300_000)]
    return {"metadata.json": json.dumps({"files": files}).encode()}


def case_no_metadata(tid: str) -> dict[str, bytes]:
    """A prefix whose metadata.json never comes (the upload timeout is 10 s here)."""
    return {"traces/kernel-1.traceg": b"x"}


def case_arch_contradiction(tid: str) -> dict[str, bytes]:
    """The sm_70 demo trace, its metadata.json claiming sm_86."""
    files = {
        p.relative_to(SM70).as_posix(): p.read_bytes()
        for p in sorted(SM70.rglob("*"))
        if p.is_file() and p.name != "metadata.json"
    }
    return complete(tid, files, trace_gpu_arch="sm_86")


CASES: dict[str, Callable[[str], dict[str, bytes]]] = {
    "xz-header-1gib": case_xz_header_line,
    "block-1024x1024": case_block_dim,
    "gzip-of-nuls": case_nul_gzip,
    "metadata-20mb": case_big_metadata,
    "metadata-300k-files": case_many_files,
    "no-metadata": case_no_metadata,
    "arch-contradiction": case_arch_contradiction,
}


def wait_finished(http: httpx.Client, trace_id: str, timeout: float = 300) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        resp = http.get(f"/api/traces/{trace_id}")
        if resp.status_code == 200 and resp.json()["state"] in ("ready", "failed"):
            return resp.json()
        time.sleep(0.2)
    raise TimeoutError(f"{trace_id} did not finish in {timeout:.0f} s")


def profile_bomb(tmp: Path) -> None:
    """`cascade timeline import` of a 1 MB gzip profile that expands to 1 GiB."""
    trace_dir = tmp / "profile-trace"
    shutil.copytree(SM70, trace_dir)
    bomb = tmp / "bomb.json.gz"
    bomb.write_bytes(
        gzip.compress(b'{"traceEvents": [' + b" " * MiB, mtime=0)
        + gzip_repeat(b" ", 1023 * MiB)
        + gzip.compress(b"]}", mtime=0)
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "cascade_tui.cli", "timeline", "import", str(bomb), str(trace_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    with peak_rss(proc.pid) as peaks:
        _, err = proc.communicate(timeout=300)
    print(
        f"{'profile-bomb (cli)':<22} {bomb.stat().st_size / MiB:>7.1f} MB  peak {peaks['server'] / 1024:>6.0f} MiB"
        f"  exit {proc.returncode}: {err.strip()[:150]}"
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        data_dir, port = tmp / "data", free_port()
        env = {
            **os.environ,
            "CASCADE_DATA_DIR": str(data_dir),
            "CASCADE_PORT": str(port),
            "CASCADE_TOKEN": TOKEN,
            "CASCADE_LAUNCHER": "manual",
            "CASCADE_SAMPLES": "0",
            "CASCADE_S3_PORT": str(free_port()),
            "CASCADE_SCAN_INTERVAL_S": "0.5",
            "CASCADE_TRACE_UPLOAD_TIMEOUT_S": "10",
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
            sys.path.insert(0, str(ROOT))
            from cascade_core.s3_endpoint import make_client, read_credentials_file

            info = read_credentials_file(data_dir)
            assert info is not None
            s3 = make_client(info)
            url = f"http://127.0.0.1:{port}"
            print(f"{'case':<22} {'upload':>10}  {'server peak':>16}  {'child peak':>10}  outcome")
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http:
                for name, make in CASES.items():
                    objects = make(name)
                    size = sum(len(body) for body in objects.values())
                    with peak_rss(server.pid) as peaks:
                        for rel, body in objects.items():  # metadata.json last, as an uploader does
                            s3.put_object(Bucket=info.bucket, Key=f"accelsim-traces/{name}/{rel}", Body=body)
                        trace = wait_finished(http, name)
                    print(
                        f"{name:<22} {size / MiB:>7.2f} MB  {peaks['server'] / 1024:>12.0f} MiB  "
                        f"{peaks['child'] / 1024:>6.0f} MiB  {trace['state']}: {trace['error']}"
                    )
                listing = http.get("/api/traces")
                print(
                    f"GET /api/traces: {listing.status_code}, {len(listing.content):,} bytes for "
                    f"{len(listing.json())} traces"
                )
                resp = http.delete("/api/traces/no-metadata")
                print(f"DELETE of the stale upload: {resp.status_code}")
        finally:
            server.send_signal(signal.SIGINT)
            server.wait(timeout=30)
        profile_bomb(tmp)


if __name__ == "__main__":
    main()
