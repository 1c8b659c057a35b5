"""Step timelines on the real 8,568-kernel A100 profile (6 steps, tests/data/profiles): the time
and peak memory of `cascade timeline import` and of `cascade simulate` per sim.

    python benchmarks/bench_timeline.py [--repeat 5]

The trace directory is built as the tests build it: its kernels are the 1,428 launches of the
profile's first step. Import is timed end to end as the command runs it (read the .json.gz,
parse, align every step, write the three files); simulate is one sim's prediction from its
results (the `SimResults` document parsed, every step replayed, compare included, as the worker
does it). Figures are the best of the repeats, in wall and CPU time of this process; peak memory
is the process's peak RSS after each phase. Targets: import under 2 s, simulate under 0.5 s.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from procstats import memory_mib  # noqa: E402  (benchmarks/procstats.py)

from cascade_core.models import SimResults  # noqa: E402
from cascade_tui.scripting.timeline_command import run_import  # noqa: E402
from cascade_worker.step_timeline import build_upload  # noqa: E402
from tests.timeline.profiles import A100, load, sim_results, steps_by_correlation, write_trace_dir  # noqa: E402

TARGET_IMPORT_S = 2.0
TARGET_SIMULATE_S = 0.5


def timed(action) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = action()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    step = steps_by_correlation(load(A100))[0]
    results_json = sim_results([k["dur"] * 1000.0 * 0.8 for k in step]).model_dump_json()
    load.cache_clear()
    with tempfile.TemporaryDirectory() as tmp:
        trace_dir = write_trace_dir(Path(tmp), step)
        base_rss = memory_mib(os.getpid())[0]
        imports = [timed(lambda: run_import(A100, trace_dir)) for _ in range(args.repeat)]
        import_peak = memory_mib(os.getpid())[1]
        result = imports[-1][2]
        sims = [
            timed(lambda: build_upload(trace_dir, SimResults.model_validate_json(results_json)))
            for _ in range(args.repeat)
        ]
        sim_peak = memory_mib(os.getpid())[1]
        upload = sims[-1][2]
    best_import = min(imports, key=lambda t: t[0])
    best_sim = min(sims, key=lambda t: t[0])
    print(
        f"profile: {A100.name} ({A100.stat().st_size / 1e6:.1f} MB gzipped), "
        f"{result.profile_kernels} kernels, {len(result.timeline.steps)} steps"  # type: ignore[attr-defined]
    )
    print(
        f"import:   best {best_import[0]:.2f} s wall, {best_import[1]:.2f} s CPU "
        f"(of {args.repeat}; target < {TARGET_IMPORT_S} s); peak RSS {import_peak:.0f} MiB "
        f"(process at start {base_rss:.0f} MiB)"
    )
    simulated = upload.simulated  # type: ignore[attr-defined]
    print(
        f"simulate: best {best_sim[0]:.3f} s wall, {best_sim[1]:.3f} s CPU per sim "
        f"(of {args.repeat}; target < {TARGET_SIMULATE_S} s), with compare; peak RSS {sim_peak:.0f} MiB; "
        f"{simulated['summary']['simulation']['coverage']['simulated_kernels']} kernels simulated"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
