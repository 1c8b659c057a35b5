"""Log chunks waiting to reach the server, kept on disk in `seq` order.

Every chunk goes through the spool: written (to a temp file, then renamed) before it is sent and
removed only after the server answered 2xx, which means it is committed. So a server outage or
restart of any length loses no line, and the worker's memory stays small however long the
outage lasts.
"""

from __future__ import annotations

import os
from collections import deque
from pathlib import Path

from cascade_core.models import LogChunk

_SUFFIX = ".chunk.json"


class Spool:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        # Only this worker writes here, so an in-memory index of the files stays exact.
        self._seqs: deque[int] = deque(
            sorted(int(p.name[: -len(_SUFFIX)]) for p in directory.glob(f"*{_SUFFIX}"))
        )

    def _path(self, seq: int) -> Path:
        return self.directory / f"{seq:012d}{_SUFFIX}"

    def put(self, chunk: LogChunk) -> None:
        path = self._path(chunk.seq)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(chunk.model_dump_json())
        os.replace(tmp, path)
        if chunk.seq not in self._seqs:
            self._seqs.append(chunk.seq)
            if len(self._seqs) > 1 and self._seqs[-2] > chunk.seq:
                self._seqs = deque(sorted(self._seqs))

    def seqs(self) -> list[int]:
        """Spooled chunks, oldest first."""
        return list(self._seqs)

    def oldest(self) -> LogChunk | None:
        if not self._seqs:
            return None
        return LogChunk.model_validate_json(self._path(self._seqs[0]).read_text())

    def remove(self, seq: int) -> None:
        self._path(seq).unlink(missing_ok=True)
        try:
            self._seqs.remove(seq)
        except ValueError:
            pass

    def __len__(self) -> int:
        return len(self._seqs)
