"""Post-processor throughput: regroup the 15 sample kernels (interleaved back into raw tracer
lines) and print lines per second and peak memory. Run: .venv/bin/python benchmarks/trace_postprocess.py"""

from __future__ import annotations

import gzip
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from cascade_server.traces.postprocess import postprocess_trace  # noqa: E402
from tests.server.test_trace_helpers import SM70, traceg_to_raw  # noqa: E402


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        traces = Path(tmp) / "traces"
        traces.mkdir()
        names, lines = [], 0
        for n in range(1, 16):
            text = gzip.decompress((SM70 / "traces" / f"kernel-{n}.traceg.gz").read_bytes()).decode()
            raw = traceg_to_raw(text, seed=n)
            lines += raw.count("\n")
            (traces / f"kernel-{n}.trace").write_text(raw)
            names.append(f"kernel-{n}.trace")
        (traces / "kernelslist").write_text("\n".join(names) + "\n")
        size = sum(p.stat().st_size for p in traces.iterdir())
        start = time.perf_counter()
        postprocess_trace(Path(tmp))
        elapsed = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{lines} raw lines ({size / 1e6:.1f} MB) in {elapsed:.2f} s: "
        f"{lines / elapsed:,.0f} lines/s, {size / 1e6 / elapsed:.1f} MB/s; peak RSS {peak_mb:.0f} MB"
    )


if __name__ == "__main__":
    main()
