"""What AccelWattch power simulation costs in Accel-Sim: the real simulator run directly on one
trace and GPU config, once without power and once with it (one after the other, never at once).
Prints, for each run, the wall time, the CPU time of the simulator (user + sys, from os.wait4, so
with the `cat`/`xz` children it reads traces through) and its peak RSS, then the ratios with /
without; checks and prints that every kernel's `gpu_sim_cycle` is the same in both runs, and the
number of kernel blocks in the power run's `accelwattch_power_report.log`. Asserts nothing about
time; exits non-zero when a sim fails or the cycles differ.

    python benchmarks/bench_power.py [--prefix /var/cache/cascade-ci/simulator] [--config SM7_QV100]
        [--trace samples/accelsim-traces/tinyformer-step-sm70] [--kernels N (the first N only)]

Accel-Sim reads `.traceg` (plain) or `.xz` kernel traces, not `.gz`: a kernel trace that is only
there as `<name>.gz` is decompressed into the temp dir first (the output says so).
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from cascade_core import simulator_layout as layout  # noqa: E402
from cascade_core.trace_inputs import KERNELSLIST, KERNELSLIST_NAME  # noqa: E402
from cascade_worker.kernel_list import TraceList, select_lines  # noqa: E402

PREFIX = Path("/var/cache/cascade-ci/simulator")
TRACE = ROOT / "samples" / "accelsim-traces" / "tinyformer-step-sm70"
POWER_ARGS = ["-power_simulation_enabled", "1", "-accelwattch_xml_file", "accelwattch_sass_sim.xml"]
REPORT = "accelwattch_power_report.log"
CYCLES = re.compile(r"^gpu_sim_cycle = (\d+)\s*$", re.MULTILINE)


@dataclass
class Run:
    wall: float  # seconds
    cpu: float  # seconds, user + sys
    rss: float  # peak, MiB
    cycles: list[int]  # gpu_sim_cycle per kernel, in order
    run_dir: Path


def find_tree(prefix: Path) -> Path:
    """The Accel-Sim tree of the build under `prefix` that has a manifest (the newest, if several)."""
    manifests = list(prefix.glob(f"builds/*/{layout.MANIFEST}"))
    if not manifests:
        sys.exit(f"bench: no build with a {layout.MANIFEST} under {prefix}/builds")
    return layout.accelsim_dir(max(manifests, key=lambda m: m.stat().st_mtime).parent)


def prepare_trace(trace: Path, kernels: int | None, dest: Path) -> tuple[Path, int, int]:
    """A kernelslist.g in `dest` for the trace's first `kernels` kernels (all by default), with its
    kernel traces beside it (a link, or decompressed from `.gz`); its path, the number of kernels
    and how many traces were decompressed."""
    listed = TraceList(trace / KERNELSLIST)
    count = len(listed) if kernels is None else kernels
    if not 0 < count <= len(listed):
        sys.exit(f"bench: --kernels must be 1 to {len(listed)} for {trace}")
    dest.mkdir(parents=True)
    unzipped = 0
    for name in listed.names[:count]:
        source = listed.path.parent / name
        if source.exists():
            (dest / name).symlink_to(source.resolve())
        else:
            with gzip.open(source.with_name(name + ".gz")) as packed, open(dest / name, "wb") as out:
                shutil.copyfileobj(packed, out)
            unzipped += 1
    text = "\n".join(select_lines(listed.lines, range(count))) + "\n"
    (dest / KERNELSLIST_NAME).write_bytes(text.encode("utf-8", errors="surrogateescape"))
    return dest / KERNELSLIST_NAME, count, unzipped


def simulate(tree: Path, config: str, kernelslist: Path, run_dir: Path, power: bool) -> Run:
    """One sim in a fresh `run_dir` holding copies of the config files; exits if it fails."""
    run_dir.mkdir()
    cfg = tree / layout.TESTED_CFGS / config
    for pattern in ("gpgpusim.config", "*.icnt", "*.xml", "*.csv"):
        for item in cfg.glob(pattern):
            shutil.copyfile(item, run_dir / item.name)
    shutil.copyfile(
        tree / "gpu-simulator/configs/tested-cfgs" / config / "trace.config", run_dir / "trace.config"
    )
    argv = [
        tree / layout.BINARY,
        "-trace",
        kernelslist,
        "-config",
        "./gpgpusim.config",
        "-config",
        "./trace.config",
    ]
    env = layout.with_library_dir(dict(os.environ), layout.lib_dir_of(tree))
    log = run_dir / "sim.log"
    with open(log, "wb") as out:
        started = time.monotonic()
        proc = subprocess.Popen(
            [*map(str, argv), *(POWER_ARGS if power else [])],
            cwd=run_dir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(
            f"bench: the sim {'with' if power else 'without'} power exited with {proc.returncode}: see {log}"
        )
    cycles = [int(c) for c in CYCLES.findall(log.read_text(errors="replace"))]
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, cycles, run_dir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefix", type=Path, default=PREFIX, help="install prefix holding builds/<key>")
    parser.add_argument("--config", default="SM7_QV100")
    parser.add_argument(
        "--trace", type=Path, default=TRACE, help="a trace folder holding traces/kernelslist.g"
    )
    parser.add_argument("--kernels", type=int, help="simulate only the first N kernels")
    args = parser.parse_args()
    tree = find_tree(args.prefix)
    tmp = Path(tempfile.mkdtemp(prefix="cascade-bench-power-"))
    kernelslist, count, unzipped = prepare_trace(args.trace, args.kernels, tmp / "trace")
    print(f"Accel-Sim {tree}, config {args.config}, trace {args.trace.name}: {count} kernels")
    if unzipped:
        print(
            f"(the simulator does not read .gz: {unzipped} kernel traces decompressed into {kernelslist.parent})"
        )
    print(f"one sim at a time on {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start")
    off = simulate(tree, args.config, kernelslist, tmp / "no-power", power=False)
    on = simulate(tree, args.config, kernelslist, tmp / "power", power=True)

    print(f"{'':16}{'wall s':>10}{'CPU s':>10}{'peak RSS MiB':>14}")
    for label, run in (("without power", off), ("with power", on)):
        print(f"{label:16}{run.wall:10.1f}{run.cpu:10.1f}{run.rss:14.1f}")
    print(f"{'with / without':16}{on.wall / off.wall:9.2f}x{on.cpu / off.cpu:9.2f}x{on.rss / off.rss:13.2f}x")

    same = off.cycles == on.cycles and len(off.cycles) == count
    if same:
        print(f"gpu_sim_cycle per kernel: identical in both runs ({', '.join(map(str, on.cycles))})")
    else:
        print(f"gpu_sim_cycle per kernel: DIFFERENT: without power {off.cycles}, with power {on.cycles}")
    report = on.run_dir / REPORT
    text = report.read_text(errors="replace") if report.exists() else ""
    starts = len(re.findall(r"^kernel_name = ", text, re.MULTILINE))
    ends = len(re.findall(r"^gpu_tot_min_power = ", text, re.MULTILINE))
    print(
        f"power report: {starts} kernel blocks in {REPORT} ({ends} gpu_tot_min_power lines, "
        f"{len(text) / 1024:.0f} KiB) for {count} kernels"
    )
    if not same or starts != count:
        sys.exit(f"bench: mismatch; the runs are left in {tmp}")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
