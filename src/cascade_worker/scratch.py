"""A sim's scratch directory: made at the start, and what is left of it at the end.

It holds the simulator's working directory (the config's files, the files the simulator writes),
the sim's kernel lists, the local copy of its log and the spool of log chunks not yet on the
server. Bounded while the sim runs (the simulator's file size limit, the log limit); at the end
nothing of it stays, with two exceptions:

- `--keep-scratch` (CASCADE_KEEP_SCRATCH) keeps all of it;
- some log chunks never reached the server (it stayed unreachable, or refused them) and the server
  still wants them: only the local copy of the log stays, `<scratch>/accelsim.log`, which holds
  every line the spool held (the spool itself, the simulator's files and the kernel lists go), and
  the worker says where it is. Nothing re-sends it: it is there for whoever reads the worker's
  output.

A cancelled sim (or one the server had already finished, which tells it to stop) keeps nothing,
whatever it did not send: the server no longer wants its output, and a cancelled simulator that wrote a flood of
output left it all behind before (818 MB in /tmp).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path

log = logging.getLogger("cascade_worker")


def make_scratch(sim_id: str, parent: Path | None) -> Path:
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"cascade-{sim_id}-", dir=parent))


def leave_scratch(scratch: Path, log_path: Path, *, keep: bool, unsent: int, wanted: bool) -> None:
    """Remove what the sim leaves behind, as the module docstring says. `unsent`: log chunks the
    server never got; `wanted`: whether the server still wants them (not cancelled)."""
    if keep:
        log.info("scratch kept: %s", scratch)
        return
    if unsent and wanted and log_path.is_file():
        for entry in scratch.iterdir():
            if entry != log_path:
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
        log.warning("%d log chunks never reached the server; the whole log is in %s", unsent, log_path)
        return
    if unsent:
        log.info("%d log chunks not sent: the server no longer wants them", unsent)
    shutil.rmtree(scratch, ignore_errors=True)
