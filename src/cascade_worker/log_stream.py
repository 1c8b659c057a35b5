"""A sim's log on its way to the server: every line is written to the local copy, cut into
numbered chunks (by age, count and size), spooled to disk, and sent in `seq` order.

Within the sim's log limit (cascade_core.log_budget): past it, the simulator's periodic output is
left out of both the copy and the chunks, so neither the scratch disk nor the server fills up,
while its kernels, stats and Cascade's notes always get through.

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

from cascade_core import log_notes
from cascade_core.log_budget import LogBudget
from cascade_core.models import LogChunk

from .chunks import Chunker
from .client import ApiRefused, ServerUnreachable, SimClient
from .spool import Spool

log = logging.getLogger("cascade_worker")

LOG_LIMIT_SETTING = "CASCADE_SIM_LOG_LIMIT_MB"


def limit_note(limit_mb: int) -> str:
    return (
        f"{log_notes.PREFIX}the log passed its limit of {limit_mb:,} MiB ({LOG_LIMIT_SETTING}): from here "
        "it keeps kernel launches, stats blocks, failures and Cascade's notes, and leaves out the "
        "simulator's other output"
    )


class LogStream:
    def __init__(
        self,
        scratch: Path,
        client: SimClient,
        give_up_after: float,
        fail: Callable[[str], None],
        log_limit_mb: int = 0,
    ) -> None:
        """`fail` stops the sim when the server refuses its log or stays unreachable (a chunk that
        overtakes the first running heartbeat is taken all the same: the server stores a
        `pending` sim's chunks); `log_limit_mb`: the log limit (0: none)."""
        self.client = client
        self.give_up_after = give_up_after
        self.fail = fail
        self.chunker = Chunker()
        self.spool_dir = scratch / "spool"
        self.spool = Spool(self.spool_dir)
        self.log_path = scratch / "accelsim.log"
        self.log_limit_mb = log_limit_mb
        # The simulator's output never holds Cascade's notes: the worker gives its own (`note`).
        self.budget = LogBudget(log_limit_mb * 2**20, limit_note(log_limit_mb), notes_trusted=False)
        self._copy: TextIO | None = None
        self._spooled = asyncio.Event()
        self.done = False

    def open(self) -> None:
        self._copy = open(self.log_path, "w", encoding="utf-8", errors="replace", newline="\n")

    def write(self, lines: list[str]) -> None:
        """The simulator's output, in order: to the local copy and to the chunks, within the
        log limit."""
        self._write(self.budget.admit_lines(lines))

    def note(self, lines: list[str]) -> None:
        """Lines of Cascade's own (cascade_core.log_notes), always kept."""
        self._write(self.budget.admit_lines(lines, own=True))

    def limit_words(self) -> str | None:
        """What the log limit left out, for the sim's error (None: nothing)."""
        summary = self.budget.summary()
        return (
            None
            if summary is None
            else f"log limit reached: {summary} ({LOG_LIMIT_SETTING}={self.log_limit_mb})"
        )

    def _write(self, lines: list[str]) -> None:
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
