"""Runs `postprocess` on one trace in a process of its own, within the settings' limits."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from cascade_core.childproc import die_with_parent

from .postprocess import EXIT_NO_SPACE, remove_stale_temporaries

if TYPE_CHECKING:
    from ..settings import Settings

KILL_GRACE_S = 30.0  # past the post-processor's own time limit, before it is killed


async def run_postprocessor(trace_dir: Path, settings: Settings) -> tuple[str | None, bool]:
    """Run `postprocess` in its own process, within the settings' limits; returns (None,
    False) on success, else its one-line error and whether the disk was full. The process
    dies with the server (even on SIGKILL), and waits for the trace's lock, so a restarted
    server never runs two on one directory."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cascade_server.traces.postprocess",
        str(trace_dir),
        "--max-ratio",
        str(settings.postprocess_max_ratio),
        "--max-bytes",
        str(settings.postprocess_max_bytes),
        "--timeout-s",
        str(settings.postprocess_timeout_s),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        preexec_fn=die_with_parent(),
    )
    try:
        # It gives up by itself at the time limit (removing what it wrote); this is the backstop.
        _, stderr = await asyncio.wait_for(proc.communicate(), settings.postprocess_timeout_s + KILL_GRACE_S)
    except (asyncio.CancelledError, TimeoutError) as exc:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        if isinstance(exc, TimeoutError):
            await asyncio.to_thread(remove_stale_temporaries, trace_dir)
            return (
                f"took longer than {settings.postprocess_timeout_s:g} s (CASCADE_POSTPROCESS_TIMEOUT_S)"
            ), False
        raise
    if proc.returncode == 0:
        return None, False
    lines = [line for line in stderr.decode(errors="replace").splitlines() if line.strip()]
    last = lines[-1] if lines else f"post-processor exited with code {proc.returncode}"
    return last.removeprefix("error: "), proc.returncode == EXIT_NO_SPACE
