"""Shared helpers for the trace tests (no tests here): the sample traces, turning a processed
`.traceg` back into the tracer's raw line format."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

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
            tb = line[len("thread block = ") :].replace(",", " ")
        elif line.startswith("warp = "):
            warp = line[len("warp = ") :]
            count = int(lines[i + 1][len("insts = ") :])
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
    (traces / "stats.csv").write_text(
        "\n".join((SM70 / "traces" / "stats.csv").read_text().splitlines()[:3]) + "\n"
    )
    return traces
