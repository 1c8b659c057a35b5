"""Parsing off the event loop: worker processes, owned by the app (app.py's `store_ctx`
starts them and closes them).

Parsing is the CPU-heavy part of ingest; in the server's process it would hold the event loop
for every group (tens of milliseconds with 16 simulators posting), and every other request
would wait. The workers parse while the loop serves; the group's transaction still
stores the chunks, the kernels and the parser state after them together (log_ingest.py).
A sim is always parsed by the same worker, which keeps its parser between groups; a group's
sims are shared between the workers and parsed at the same time.

Each worker is a process at the end of a socket: one pickled list of jobs in, one pickled
answer out, each a frame (its length, then its bytes). The event loop writes and reads its end
itself, without blocking, as it does any socket: no thread between them. (A thread per round
trip cost two thread wake-ups each way, and a ProcessPoolExecutor two threads and a queue: on
the 2-core machines benchmarks/bench_ingest.py runs on, a wake-up costs 0.1-0.2 ms of CPU.)
"""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import os
import pickle
import signal
import socket
import struct
import zlib
from collections.abc import Callable
from multiprocessing.process import BaseProcess

from cascade_core.childproc import die_with_parent

from ..domain_errors import Unavailable
from .parsing import ParseJob, ParseResult, parse_in_this_process

# At most this many workers, however many cores (a group is a few dozen chunks at most).
MAX_WORKERS = 4


def default_workers() -> int:
    """One worker per core the server may use beyond the event loop's, at least one. On 2 cores,
    two workers and the loop took turns on them, and the parse cost 15-25% more CPU than with
    one worker, for the same POST latency (benchmarks/bench_ingest.py, alternated)."""
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0)) - 1))


# A frame's length; a frame of length 0 is the server's word to stop.
_FRAME = struct.Struct("!Q")


class ParseWorkerDied(Unavailable):
    """A worker died (killed, out of memory) with jobs in hand. The next parse starts new
    workers, which rebuild their parsers from the saved states; the ingest service tries the
    group's parse once more on them, and if they die too the chunks get a 503, which their
    simulators retry."""


def _serve(sock: socket.socket, others: list[socket.socket], die: Callable[[], None]) -> None:
    """A worker's life: jobs in, answers out, until the server says stop or its end closes.

    It dies with the server, even by SIGKILL (else it would live on, holding the server's stdout
    and stderr open, and whoever waits for them to close would wait for good), and drops the
    server's signal handlers, copied by the fork (the server stops its workers; a SIGTERM ends
    one; Ctrl-C, sent to the whole terminal's group, is the server's to handle). The server's
    ends of the workers forked before it are closed here, so that each worker sees its own end
    close when the server dies or closes it."""
    die()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for other in others:
        other.close()
    gc.freeze()
    reader, writer = sock.makefile("rb"), sock.makefile("wb")
    while True:
        header = reader.read(_FRAME.size)
        if len(header) < _FRAME.size:
            return
        (size,) = _FRAME.unpack(header)
        data = reader.read(size) if size else b""
        if len(data) < size or not size:
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
        writer.write(_FRAME.pack(len(data)))
        writer.write(data)
        writer.flush()


class _Worker:
    def __init__(self, process: BaseProcess, sock: socket.socket) -> None:
        self.process = process
        self.sock = sock
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._lock = asyncio.Lock()  # one round trip on the socket at a time
        # A round trip left half done (cancelled): the socket is mid-frame, and this worker is
        # of no more use.
        self.broken = False

    async def round_trip(self, jobs: list[ParseJob]) -> list[ParseResult]:
        async with self._lock:
            try:
                if self._streams is None:
                    self._streams = await asyncio.open_unix_connection(sock=self.sock)
                reader, writer = self._streams
                data = pickle.dumps(jobs, protocol=5)
                writer.write(_FRAME.pack(len(data)))
                writer.write(data)
                await writer.drain()
                (size,) = _FRAME.unpack(await reader.readexactly(_FRAME.size))
                ok, answer = pickle.loads(await reader.readexactly(size))
            except (asyncio.IncompleteReadError, OSError) as exc:
                self.broken = True
                raise ParseWorkerDied(
                    f"a log parse worker died (pid {self.process.pid}): the chunk was not stored; send it again"
                ) from exc
            except BaseException:
                self.broken = True
                raise
        if not ok:
            raise answer
        return answer

    def stop(self) -> None:
        if not self.broken:  # (a broken worker's socket is mid-frame: it is killed below)
            try:
                self.sock.send(_FRAME.pack(0))  # idle: the loop's writer holds nothing unsent
            except OSError:
                pass  # it died
        if self._streams is not None:
            self._streams[1].close()
        else:
            self.sock.close()
        self.process.join(timeout=0 if self.broken else 5.0)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5.0)


class ParsePool:
    def __init__(self, workers: int | None = None) -> None:
        self._size = workers or default_workers()
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
            ours, theirs = socket.socketpair()
            others = [worker.sock for worker in self._workers] + [ours]
            process = context.Process(target=_serve, args=(theirs, others, die_with_parent()), daemon=True)
            process.start()
            theirs.close()
            ours.setblocking(False)
            self._workers.append(_Worker(process, ours))

    async def parse(self, jobs: list[ParseJob]) -> list[ParseResult]:
        if any(worker.broken for worker in self._workers):
            self.close()  # one died, or a parse was cancelled mid-way
        if not self._workers:  # new ones (the server's threads are idle)
            self.start()
        shares: list[list[ParseJob]] = [[] for _ in self._workers]
        for job in jobs:
            shares[zlib.crc32(job.sim_id.encode()) % len(shares)].append(job)
        answers = await asyncio.gather(
            *(worker.round_trip(share) for worker, share in zip(self._workers, shares) if share),
            return_exceptions=True,
        )
        by_sim: dict[str, ParseResult] = {}
        for answer in answers:
            if isinstance(answer, BaseException):
                raise answer
            by_sim.update((result.sim_id, result) for result in answer)
        return [by_sim[job.sim_id] for job in jobs]

    def close(self) -> None:
        workers, self._workers = self._workers, []
        for worker in workers:
            worker.stop()
