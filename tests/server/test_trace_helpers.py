"""Shared helpers for the trace tests (no tests here): the sample traces, turning a processed
`.traceg` back into the tracer's raw line format, and a real `rclone serve s3` on a free port."""

from __future__ import annotations

import gzip
import random
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest
from botocore.config import Config

REPO = Path(__file__).resolve().parents[2]
SAMPLE_TRACES = REPO / "samples" / "accelsim-traces"
SM70 = SAMPLE_TRACES / "tinyformer-step-sm70"


def sample_traceg(kernel: int, sample: Path = SM70) -> str:
    return gzip.decompress((sample / "traces" / f"kernel-{kernel}.traceg.gz").read_bytes()).decode()


def traceg_to_raw(traceg: str, seed: int = 0) -> str:
    """The raw NVBit tracer output a `.traceg` was made from: the same header, then every
    instruction as `tb_x tb_y tb_z warp <rest>`, with the warps of all thread blocks interleaved
    (in a random but per-warp order-preserving way, as concurrently running warps would be)."""
    lines = traceg.split("\n")
    header_end = next(i for i, line in enumerate(lines) if line.startswith("#traces format"))
    header = lines[: header_end + 1]
    streams: list[list[str]] = []
    tb = ""
    i = header_end + 1
    while i < len(lines):
        line = lines[i]
        if line.startswith("thread block = "):
            tb = line[len("thread block = "):].replace(",", " ")
        elif line.startswith("warp = "):
            warp = line[len("warp = "):]
            count = int(lines[i + 1][len("insts = "):])
            body = lines[i + 2 : i + 2 + count]
            streams.append([f"{tb} {warp} {rest}" for rest in body])
            i += 2 + count
            continue
        i += 1
    rng = random.Random(seed)
    cursors = [0] * len(streams)
    live = [n for n, s in enumerate(streams) if s]
    out: list[str] = []
    while live:
        n = rng.choice(live)
        out.append(streams[n][cursors[n]])
        cursors[n] += 1
        if cursors[n] == len(streams[n]):
            live.remove(n)
    return "\n".join(header + [""] + out) + "\n"


def raw_dir_for_upload(tmp_path: Path) -> Path:
    """What the NVBit tracer leaves behind: a traces/ folder with raw kernel traces."""
    traces = tmp_path / "run" / "traces"
    traces.mkdir(parents=True)
    (traces / "kernelslist").write_text("MemcpyHtoD,0x00007f4c5e000000,256\nkernel-1.trace\nkernel-2.trace\n")
    (traces / "kernel-1.trace").write_text(traceg_to_raw(sample_traceg(1)))
    (traces / "kernel-2.trace").write_text(traceg_to_raw(sample_traceg(2)))
    (traces / "stats.csv").write_text("\n".join((SM70 / "traces" / "stats.csv").read_text().splitlines()[:3]) + "\n")
    return traces


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class RcloneS3:
    endpoint: str
    access_key: str
    secret_key: str
    root: Path
    bucket: str = "cascade"

    def client(self):
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name="us-east-1",
            config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
        )


@pytest.fixture(scope="session")
def rclone_s3(tmp_path_factory):
    """A real `rclone serve s3` (the embedded server's binary) for the whole session."""
    from cascade_server.traces.embedded_s3 import rclone_binary

    root = tmp_path_factory.mktemp("s3")
    (root / "cascade").mkdir()
    port = free_port()
    info = RcloneS3(f"http://127.0.0.1:{port}", "TESTACCESSKEY0001", "testsecretkey0000000001", root)
    proc = subprocess.Popen(
        [str(rclone_binary()), "serve", "s3", "--addr", f"127.0.0.1:{port}", str(root)],
        env={"RCLONE_AUTH_KEY": f'"{info.access_key},{info.secret_key}"', "RCLONE_CONFIG": "/dev/null"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while True:  # poll until it accepts connections (not a fixed sleep)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("rclone serve s3 did not start") from None
            time.sleep(0.05)
    yield info
    proc.terminate()
    proc.wait(timeout=10)
