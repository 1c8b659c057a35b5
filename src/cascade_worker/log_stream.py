"""A sim's log on its way to the server: every line is written to the local copy, cut into
numbered chunks (by age, count and size), spooled to disk, and sent in `seq` order.

Two tasks run for the whole sim, across every simulator process it starts:
- the flusher cuts a chunk when the oldest pending line is ~0.5 s old;
- the sender posts spooled chunks in `seq` order, retrying until the server has them.
Every chunk goes through the spool (spool.py), so a server outage of any length loses no line.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from cascade_core.models import LogChunk

from .chunks import Chunker
from .client import ApiRefused, ServerUnreachable, SimClient
from .spool import Spool

log = logging.getLogger("cascade_worker")


class LogStream:
    def __init__(
        self,
        scratch: Path,
        client: SimClient,
        give_up_after: float,
        fail: Callable[[str], None],
    ) -> None:
        """`fail` stops the sim when the server refuses its log or stays unreachable. (A chunk
        that overtakes the first running heartbeat is taken all the same: the server stores a
        `pending` sim's chunks.)"""
        self.client = client
        self.give_up_after = give_up_after
        self.fail = fail
        self.chunker = Chunker()
        self.spool_dir = scratch / "spool"
        self.spool = Spool(self.spool_dir)
        self.log_path = scratch / "accelsim.log"
        self._copy: TextIO | None = None
        self._spooled = asyncio.Event()
        self.done = False

    def open(self) -> None:
        self._copy = open(self.log_path, "w", encoding="utf-8", errors="replace", newline="\n")

    def write(self, lines: list[str]) -> None:
        """Lines of the log, in order: to the local copy and to the chunks."""
        if self._copy is not None and lines:
            self._copy.write("\n".join(lines))
            self._copy.write("\n")
        self._spool(self.chunker.add(lines, time.monotonic()))

    def finish(self) -> None:
        """No more lines: the last chunk goes out now, and the sender stops once all are sent."""
        if not self.done:
            self.done = True
            last = self.chunker.flush()
            self._spool([last] if last else [])
            self._spooled.set()
        if self._copy is not None:
            self._copy.close()
            self._copy = None

    def unsent(self) -> int:
        return len(self.spool)

    def _spool(self, chunks: list[LogChunk]) -> None:
        for chunk in chunks:
            self.spool.put(chunk)
        if chunks:
            self._spooled.set()

    async def flusher(self) -> None:
        while True:
            wait = self.chunker.seconds_until_due(time.monotonic())
            await asyncio.sleep(0.1 if wait is None else max(wait, 0.02))
            chunk = self.chunker.due(time.monotonic())
            if chunk is not None:
                self._spool([chunk])

    async def sender(self) -> None:
        while True:
            chunk = self.spool.oldest()
            if chunk is None:
                if self.done:
                    return
                self._spooled.clear()
                await self._spooled.wait()
                continue
            try:
                # Never give up on a chunk while the sim runs; a long outage just grows the spool.
                await self.client.send_chunk(chunk, give_up_after=self.give_up_after)
            except ApiRefused as exc:
                if exc.status == 422:  # cannot happen with our own chunks; do not block the rest
                    log.error("the server refused chunk %d: %s", chunk.seq, exc.detail)
                else:
                    self.fail(f"the server refused the log: {exc}")
                    return
            except ServerUnreachable as exc:
                self.fail(str(exc))
                return
            self.spool.remove(chunk.seq)
