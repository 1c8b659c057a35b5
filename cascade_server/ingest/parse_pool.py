"""Parsing off the event loop: worker processes, owned by the app (app.py's `store_ctx`
starts them and closes them).

Parsing is the CPU-heavy part of ingest; in the server's process it would hold the event loop
for every group (tens of milliseconds with 16 simulators posting), and every other request
would wait. The workers parse while the loop serves; the group's transaction still
stores the chunks, the kernels and the parser state after them together (log_ingest.py).
A sim is always parsed by the same worker, which keeps its parser between groups; a group's
sims are shared between the workers and parsed at the same time.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import signal
import zlib
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from ..childproc import die_with_parent
from .parsing import ParseJob, ParseResult, parse_in_this_process

# Two workers: a group's sims parse on both cores while the loop waits on neither.
WORKERS = 2


def _ready() -> None:
    """Run once in a new worker, so that it exists before the server starts threads."""


def _worker_setup(die: Callable[[], None]) -> None:
    """In a new worker: die with the server, even by SIGKILL (else it would live on, holding the
    server's stdout and stderr open, and whoever waits for them to close would wait for good);
    and drop the server's signal handlers, copied by the fork (the server stops its workers; a
    SIGTERM ends one; Ctrl-C, sent to the whole terminal's group, is the server's to handle)."""
    die()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class ParsePool:
    def __init__(self, workers: int = WORKERS) -> None:
        self._workers = workers
        # One single-process executor per worker, each always given the same sims, so that
        # each keeps its sims' parsers (parsing.py).
        self._pools: list[ProcessPoolExecutor] = []

    def start(self) -> None:
        """Fork the workers now, before the database's threads exist: a fork copies the server's
        modules (no second start-up, a few milliseconds) but not its threads, and a thread that
        held a lock at the fork would leave it held in the child. (forkserver would import the
        server afresh: a second or more, which every group would wait for at first.)"""
        context = multiprocessing.get_context("fork")
        self._pools = [
            ProcessPoolExecutor(
                1, mp_context=context, initializer=_worker_setup, initargs=(die_with_parent(),)
            )
            for _ in range(self._workers)
        ]
        for pool in self._pools:
            pool.submit(_ready).result()

    async def parse(self, jobs: list[ParseJob]) -> list[ParseResult]:
        if not self._pools:  # after a worker died: new ones (the server's threads are idle)
            self.start()
        shares: list[list[ParseJob]] = [[] for _ in self._pools]
        for job in jobs:
            shares[zlib.crc32(job.sim_id.encode()) % len(shares)].append(job)
        loop = asyncio.get_running_loop()
        try:
            answers = await asyncio.gather(
                *(
                    loop.run_in_executor(pool, parse_in_this_process, share)
                    for pool, share in zip(self._pools, shares)
                    if share
                )
            )
        except BrokenProcessPool:
            # A worker died (killed, out of memory): this group fails (its chunks are retried)
            # and the next one starts new workers, which rebuild parsers from saved states.
            self.close()
            raise
        by_sim = {result.sim_id: result for answer in answers for result in answer}
        return [by_sim[job.sim_id] for job in jobs]

    def close(self) -> None:
        for pool in self._pools:
            pool.shutdown(wait=False, cancel_futures=True)
        self._pools = []
