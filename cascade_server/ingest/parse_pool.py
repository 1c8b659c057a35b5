"""Parsing off the event loop: worker processes, owned by the app (app.py's `store_ctx`
starts them and closes them).

Parsing is the CPU-heavy part of ingest; in the server's process it would hold the event loop
for every group (tens of milliseconds with 16 simulators posting), and every other request
would wait. The workers parse while the loop serves; the group's transaction still
stores the chunks, the kernels and the parser state after them together (log_ingest.py).
A sim is always parsed by the same worker, which keeps its parser between groups; a group's
sims are shared between the workers and parsed at the same time.

Each worker is a process at the end of a pipe: one pickled list of jobs in, one pickled answer
out, sent and awaited from a thread so the loop never blocks on the pipe. (A
ProcessPoolExecutor per worker did the same through two threads of its own, a queue and their
wake-ups: about half a millisecond of CPU per call against some 50 µs here, measured with
benchmarks/bench_ingest.py in mind, where a group costs one call per worker.)
"""

from __future__ import annotations

import asyncio
import multiprocessing
import pickle
import signal
import threading
import zlib
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

from ..childproc import die_with_parent
from ..domain_errors import Unavailable
from .parsing import ParseJob, ParseResult, parse_in_this_process

# Two workers: a group's sims parse on both cores while the loop waits on neither.
WORKERS = 2


class ParseWorkerDied(Unavailable):
    """A worker died (killed, out of memory) with jobs in hand. The next parse starts new
    workers, which rebuild their parsers from the saved states; the ingest service tries the
    group's parse once more on them, and if they die too the chunks get a 503, which their
    simulators retry."""


def _serve(conn: Connection, die: Callable[[], None]) -> None:
    """A worker's life: jobs in, answers out, until the server closes its end.

    It dies with the server, even by SIGKILL (else it would live on, holding the server's stdout
    and stderr open, and whoever waits for them to close would wait for good), and drops the
    server's signal handlers, copied by the fork (the server stops its workers; a SIGTERM ends
    one; Ctrl-C, sent to the whole terminal's group, is the server's to handle)."""
    die()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            data = conn.recv_bytes()
        except (EOFError, OSError):
            return
        if not data:  # the server's word to stop
            return
        jobs = pickle.loads(data)
        try:
            answer: tuple[bool, object] = (True, parse_in_this_process(jobs))
        except Exception as exc:  # a job the parser refuses fails its group, not the worker
            answer = (False, exc)
        try:
            data = pickle.dumps(answer, protocol=5)
        except Exception as exc:
            data = pickle.dumps((False, RuntimeError(f"parse worker: {exc!r}")), protocol=5)
        conn.send_bytes(data)


class _Worker:
    def __init__(self, process: BaseProcess, conn: Connection) -> None:
        self.process = process
        self.conn = conn
        self.lock = threading.Lock()  # one round trip on the pipe at a time

    def round_trip(self, jobs: list[ParseJob]) -> list[ParseResult]:
        """In a thread: send the jobs, wait for the answer."""
        with self.lock:
            try:
                self.conn.send_bytes(pickle.dumps(jobs, protocol=5))
                ok, answer = pickle.loads(self.conn.recv_bytes())
            except (EOFError, OSError) as exc:
                raise ParseWorkerDied(
                    f"a log parse worker died (pid {self.process.pid}): the chunk was not stored; send it again"
                ) from exc
        if not ok:
            raise answer
        return answer

    def stop(self) -> None:
        # Said, not left to the pipe's end: a worker forked later holds a copy of this end, so
        # closing it here would not reach this worker as an end of file.
        with self.lock:
            try:
                self.conn.send_bytes(b"")
            except OSError:
                pass  # it died
            self.conn.close()
        self.process.join(timeout=5.0)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5.0)


class ParsePool:
    def __init__(self, workers: int = WORKERS) -> None:
        self._size = workers
        # Each worker is always given the same sims, so that it keeps their parsers (parsing.py).
        self._workers: list[_Worker] = []

    def start(self) -> None:
        """Fork the workers now, before the database's threads exist, and from the event loop's
        thread (a worker's death signal follows the thread that forked it): a fork copies the
        server's modules (no second start-up, a few milliseconds) but not its threads, and a
        thread that held a lock at the fork would leave it held in the child. (forkserver would
        import the server afresh: a second or more, which every group would wait for at first.)"""
        context = multiprocessing.get_context("fork")
        for _ in range(self._size):
            ours, theirs = context.Pipe(duplex=True)
            process = context.Process(target=_serve, args=(theirs, die_with_parent()), daemon=True)
            process.start()
            theirs.close()
            self._workers.append(_Worker(process, ours))

    async def parse(self, jobs: list[ParseJob]) -> list[ParseResult]:
        if not self._workers:  # after a worker died: new ones (the server's threads are idle)
            self.start()
        shares: list[list[ParseJob]] = [[] for _ in self._workers]
        for job in jobs:
            shares[zlib.crc32(job.sim_id.encode()) % len(shares)].append(job)
        loop = asyncio.get_running_loop()
        # Every round trip ends before this returns or raises: a pipe is closed only when no
        # thread is reading it.
        answers = await asyncio.gather(
            *(
                loop.run_in_executor(None, worker.round_trip, share)
                for worker, share in zip(self._workers, shares)
                if share
            ),
            return_exceptions=True,
        )
        by_sim: dict[str, ParseResult] = {}
        for answer in answers:
            if isinstance(answer, ParseWorkerDied):
                self.close()
            if isinstance(answer, BaseException):
                raise answer
            by_sim.update((result.sim_id, result) for result in answer)
        return [by_sim[job.sim_id] for job in jobs]

    def close(self) -> None:
        workers, self._workers = self._workers, []
        for worker in workers:
            worker.stop()
