"""A large real_timing.json (issue 32): 300,000 kernels, about 12 MB. Prints how long the
server's event loop waited while the file was read (in a process of its own), how long
`/comparison` took, and how long `/api/health` waited while `/comparison` and `/api/accuracy`
ran (it was 4-5 s when the file was parsed on the loop for every request).

    python benchmarks/bench_real_timing.py [--kernels 300000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cascade_server.settings import Settings  # noqa: E402
from tests.conftest import TOKEN, LiveServer, reserve_port  # noqa: E402
from tests.server.real_timing_scale import KERNELS, run_scenario  # noqa: E402


def accelsim_dir(root: Path) -> Path:
    config = root / "gpu-simulator/gpgpu-sim/configs/tested-cfgs/SM7_QV100/gpgpusim.config"
    config.parent.mkdir(parents=True)
    config.write_text("-gpgpu_compute_capability_major 7\n-gpgpu_clock_domains 1132.0:1132.0:1132.0:850.0\n")
    return root


async def main(kernels: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            data_dir=Path(tmp) / "data",
            host="127.0.0.1",
            port=reserve_port(),
            token=TOKEN,
            launcher="manual",
            samples=False,
            accelsim_dir=accelsim_dir(Path(tmp) / "accelsim"),
        )
        server = await LiveServer(settings).start()
        try:
            out = await run_scenario(server, kernels)
        finally:
            await server.stop()
    health = sorted(out.health_s)
    print(f"real_timing.json kernels:            {kernels:,} ({out.rows:,} rows stored)")
    print(f"loop's longest wait while reading:   {max(out.loop_waits_s) * 1000:.0f} ms")
    print(f"/comparison took:                    {out.comparison_s:.2f} s")
    print(
        f"/api/health during the big requests: {len(health)} checks, "
        f"median {statistics.median(health) * 1000:.0f} ms, max {health[-1] * 1000:.0f} ms"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=KERNELS)
    asyncio.run(main(parser.parse_args().kernels))
