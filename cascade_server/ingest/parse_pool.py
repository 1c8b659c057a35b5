"""Parsing off the event loop: one worker process, owned by the app (app.py's `store_ctx`
starts none and closes it).

Parsing is the CPU-heavy part of ingest; in the server's process it would hold the event loop
for every group (tens of milliseconds with 16 simulators posting), and every other request
would wait. The worker process parses while the loop serves; the group's transaction still
stores the chunks, the kernels and the parser state after them together (log_ingest.py).
One process: parses are ordered per sim, the worker keeps the parsers, and the machine's
other core is the loop's.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from .parsing import ParseJob, ParseResult, parse_in_this_process


def _ready() -> None:
    """Run once in a new worker, so that it exists before the server starts threads."""


class ParsePool:
    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None

    def start(self) -> None:
        """Fork the worker now, before the database's threads exist: a fork copies the server's
        modules (no second start-up, a few milliseconds) but not its threads, and a thread that
        held a lock at the fork would leave it held in the child. (forkserver would import the
        server afresh: a second or more, which every group would wait for at first.)"""
        self._pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
        self._pool.submit(_ready).result()

    async def parse(self, jobs: list[ParseJob]) -> list[ParseResult]:
        if self._pool is None:  # after a worker died: a new one (the server's threads are idle)
            self.start()
        assert self._pool is not None
        try:
            return await asyncio.get_running_loop().run_in_executor(self._pool, parse_in_this_process, jobs)
        except BrokenProcessPool:
            # The worker died (killed, out of memory): this group fails (its chunks are retried)
            # and the next one starts a new worker, which rebuilds parsers from saved states.
            self.close()
            raise

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
