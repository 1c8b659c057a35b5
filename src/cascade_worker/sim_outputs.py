"""After a sim's last simulator: what it leaves the server besides its log chunks, each call
retried by the client (ServerUnreachable and ApiRefused propagate to the final report): the files
the simulator wrote, the log as one file, and the step timeline when the trace has one."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from cascade_core.timeline.stats import pct_text

from . import step_timeline, uploads
from .client import ApiRefused, SimClient

log = logging.getLogger("cascade_worker")


async def upload_files(client: SimClient, run_dir: Path, before: uploads.Snapshot) -> None:
    """Every file the simulator wrote or changed since `before`; one the server refuses as too big
    (413) is skipped with a warning."""
    written = uploads.written_since(before, uploads.snapshot(run_dir))
    for relative in written:
        upload = await asyncio.to_thread(uploads.prepare, run_dir, relative)
        if upload is None:
            log.warning("not uploading %s (name not allowed or over 64 MiB)", relative)
            continue
        try:
            await client.put_file(upload.name, upload.data)
        except ApiRefused as exc:
            if exc.status != 413:
                raise
            log.warning("the server refused %s: %s", upload.name, exc.detail)


async def upload_log(client: SimClient, log_path: Path) -> None:
    """The local copy of the log, gzipped, as `accelsim.log.gz`."""
    data = await asyncio.to_thread(uploads.gzip_file, log_path)
    try:
        await client.put_file(uploads.LOG_NAME, data)
    except ApiRefused as exc:
        if exc.status != 413:
            raise
        log.warning("the server refused %s: %s", uploads.LOG_NAME, exc.detail)


async def send_step_timeline(client: SimClient, trace_dir: Path) -> None:
    """Never fails the sim: a problem is logged and uploaded as the sim's error file."""
    try:
        upload = await step_timeline.send_step_timeline(client, trace_dir)
    except step_timeline.StepTimelineError as exc:
        log.warning("step timeline not sent: %s", exc)
        await client.put_file(step_timeline.ERROR_FILE, f"step timeline not sent: {exc}\n".encode())
        return
    wall = upload.compare["summary"]["wall_ns"] if upload.compare else {}
    log.info(
        "step timeline sent: %d steps, mean |wall error| %s",
        len(upload.simulated["steps"]),
        pct_text(wall.get("mean_abs_error_pct"), digits=1),
    )
