"""Seed the sample trace and the sample run from `samples/`, once per data dir.

The sample trace is the synthetic sm_70 tinyformer-step workload (`samples/sample-trace/`:
metadata.json and the tracer's stats.csv with its 15 kernel launches). It is `sample: true` and
has no instruction traces, so no run can start on it. The sample run (`sample: true, replay:
true`) holds three sims, SM7_QV100, SM7_GV100 and SM7_TITANV, whose logs are the real Accel-Sim
runs recorded in `samples/recordings/`. Each log goes through the same store path as a live
sim's (`append_log` in numbered chunks, then heartbeats), so its kernels and metrics come from
the same parser as live data.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
from pathlib import Path

from cascade_core.models import TERMINAL_SIM_STATES, Heartbeat, RunEntry, TraceDetail, utcnow
from cascade_core.trace_kernels import parse_stats

from .content_types import content_type_for
from .gpu_configs import scan_gpu_configs
from .ingest.log_ingest import LogIngest
from .partial_files import partial_path
from .settings import Settings
from .storage import Store
from .traces.metadata import parse_metadata

log = logging.getLogger(__name__)

SAMPLE_TRACE_ID = "sample__tinyformer-step__sm70"
SAMPLE_CONFIGS = ("SM7_QV100", "SM7_GV100", "SM7_TITANV")
SEEDED_KEY = "samples_seeded"
CHUNK_LINES = 1000
LOG_FILE = "accelsim.log.gz"


class SampleError(Exception):
    """samples/ is missing or incomplete; the message says what."""


def sample_trace(samples_dir: Path) -> TraceDetail:
    directory = samples_dir / "sample-trace"
    try:
        raw_metadata = (directory / "metadata.json").read_bytes()
        stats = (directory / "stats.csv").read_text()
    except OSError as exc:
        raise SampleError(f"cannot read the sample trace in {directory}: {exc.strerror or exc}") from None
    metadata = parse_metadata(raw_metadata, SAMPLE_TRACE_ID)
    kernels = parse_stats(stats)
    now = utcnow()
    return TraceDetail(
        id=SAMPLE_TRACE_ID,
        state="ready",
        created_at=now,
        updated_at=now,
        kernel_count=len(kernels),
        bytes=len(raw_metadata) + len(stats.encode()),
        sample=True,
        metadata=metadata.raw,
        kernels=kernels,
        **metadata.trace_fields(),
    )


def recorded_log(samples_dir: Path, config: str) -> tuple[bytes, list[str]]:
    """The recording's gzip bytes and its lines (split on "\\n", as a worker sends them)."""
    directory = samples_dir / "recordings"
    try:
        manifest = json.loads((directory / "recordings.json").read_text())
        compressed = (directory / manifest["recordings"][config]["log"]).read_bytes()
    except (OSError, KeyError, ValueError) as exc:
        raise SampleError(f"no recording for {config} in {directory}: {exc}") from None
    lines = gzip.decompress(compressed).decode("utf-8", errors="replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return compressed, lines


async def seed_samples(store: Store, ingest: LogIngest, settings: Settings) -> None:
    """Seed once: does nothing when this data dir already has the samples."""
    if await store.db.get_meta(SEEDED_KEY):
        return
    await _close_interrupted_seed(store)
    samples_dir = settings.samples_dir
    trace = sample_trace(samples_dir)
    # The recordings' own configs (clocks), whatever Accel-Sim install the server lists.
    configs = scan_gpu_configs(samples_dir / "accelsim")
    missing = [name for name in SAMPLE_CONFIGS if name not in configs]
    if missing:
        raise SampleError(f"no GPU config for {', '.join(missing)} under {samples_dir / 'accelsim'}")
    logs = {config: recorded_log(samples_dir, config) for config in SAMPLE_CONFIGS}
    await store.traces.put_trace(trace)
    run = await store.runs.create_run(
        trace,
        [RunEntry(gpu_config=name, count=1) for name in SAMPLE_CONFIGS],
        configs,
        sample=True,
        replay=True,
    )
    for sim in run.sims:
        compressed, lines = logs[sim.gpu_config]
        await store.sim_states.mark_launching(sim.id, None)
        await store.sim_states.heartbeat(sim.id, Heartbeat(state="running"))
        for seq, start in enumerate(range(0, len(lines), CHUNK_LINES)):
            await ingest.append_log(sim.id, seq, lines[start : start + CHUNK_LINES])
        await _put_file(store, settings, sim.id, LOG_FILE, compressed)
        await store.sim_states.heartbeat(sim.id, Heartbeat(state="succeeded", exit_code=0))
    await store.db.set_meta(SEEDED_KEY, run.id)
    log.info("seeded the sample trace %s and the sample run %s", trace.id, run.id)


async def _close_interrupted_seed(store: Store) -> None:
    """A server stopped mid-seed leaves a sample run with unfinished sims: fail them, so no
    launcher picks them up after the restart."""
    for summary in await store.runs.list_runs():
        if not summary.sample:
            continue
        run = await store.runs.get_run(summary.id)
        for sim in run.sims if run else []:
            if sim.state not in TERMINAL_SIM_STATES:
                await store.sim_states.mark_failed(sim.id, "seeding the sample was interrupted")


async def _put_file(store: Store, settings: Settings, sim_id: str, name: str, data: bytes) -> None:

    directory = settings.files_dir / sim_id
    directory.mkdir(parents=True, exist_ok=True)
    partial = partial_path(directory, name)
    partial.write_bytes(data)
    os.replace(partial, directory / name)
    await store.outputs.put_file(sim_id, name, len(data), content_type_for(name))
