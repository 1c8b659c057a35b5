"""Sim logs in: chunks committed in groups, parsed in order into kernels and progress.

Chunks are committed in groups: whatever arrives while a group is being written goes into the
next one, so many simulators cost one transaction, not one each. A chunk past a gap is parked
(stored, not parsed) until the gap fills, at most MAX_AHEAD chunks ahead; a gap still open
GAP_WAIT_S later, or at the sim's final heartbeat, is closed with a line saying which chunks
never arrived, and what came after it is parsed (`close_gaps`). A sim still `pending` has no
simulator yet: its chunks are refused, so none can take the place of its real chunk 0. Parsing runs in the parse pool's worker process when
there is one (parse_pool.py), so it never holds the event loop, yet inside the group's write:
the chunks, the kernels they completed and each sim's parser state commit together, and a
restarted server resumes exactly. A group that fails for several sims is written again one sim
at a time, so one sim's bad chunk fails only that sim's chunks.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from dataclasses import dataclass

from pydantic import BaseModel

from cascade_core.models import INT64_MAX, KernelEvent, LogEvent, SimEvent

from ..domain_errors import Conflict, NotFound
from ..storage import Store, Transaction
from ..storage.codecs import chunk_lines, chunk_text, sim_from_row
from ..storage.logs import ChunkRow, chunk_row
from .parse_pool import ParsePool, ParseWorkerDied
from .parsing import ParseJob, ParseResult, Parsers, StateNeeded
from .shard_placement import ShardPlacement

log = logging.getLogger(__name__)

# How long a gap in a sim's chunks may stay open before what came after it is parsed without it.
# A worker retries a chunk until the server has it, so a gap this old is lines that are lost.
GAP_WAIT_S = 30.0

# How far past the chunk a sim's log waits for (`next_seq`) a chunk may be, to be parked until
# the gap fills: parked chunks are looked up with every append of the sim, so they must be few
# (20,000 made appends 75 times slower). A worker sends its chunks in order, a few at a time.
MAX_AHEAD = 1_000

# Chunks per parse when a sim's parser reads its stored log again (a few MB at a time).
REPLAY_BATCH = 16


@dataclass(slots=True)
class _PendingChunk:
    sim_id: str
    seq: int
    text: str  # chunk_text(lines): the chunk's one form in ingest, as the parse workers take it
    done: asyncio.Future[None]


class LogIngest:
    def __init__(self, store: Store, pool: ParsePool | None = None) -> None:
        self.store = store
        # Without a pool (tests, scripts), parsing runs here, on the loop.
        self._pool = pool
        self._parsers = Parsers()
        self._queue: list[_PendingChunk] = []
        self._writer: asyncio.Task[None] | None = None
        # sim id -> (the chunk its log waits for, the timer that closes that gap)
        self._gap_timers: dict[str, tuple[int | None, asyncio.TimerHandle]] = {}
        self._closing: set[asyncio.Task[None]] = set()

    def close(self) -> None:
        """Stop the gap timers (the app is ending; a restarted server finds the gaps again)."""
        for _, timer in self._gap_timers.values():
            timer.cancel()
        self._gap_timers.clear()
        for task in self._closing:
            task.cancel()

    async def append_log(self, sim_id: str, seq: int, lines: list[str]) -> None:
        """Store a chunk (the first one per seq wins) and parse every chunk now in order.
        This returns once the chunk's group is committed."""
        done = asyncio.get_running_loop().create_future()
        self._queue.append(_PendingChunk(sim_id, seq, chunk_text(lines), done))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_groups())
        await done

    async def _write_groups(self) -> None:
        while self._queue:
            group: list[_PendingChunk] = []
            try:
                async with self.store.db.write() as tx:
                    # Taken under the lock: chunks that came while it was waited for join in.
                    group, self._queue = self._queue, []
                    await self._write_group(tx, group)
            except Exception as exc:
                if not group:
                    # The write failed before it took the queue (a database open read-only on
                    # a full disk): the chunks waiting fail with it, or this loop would spin.
                    group, self._queue = self._queue, []
                by_sim = _by_sim(group)
                if len(by_sim) == 1:
                    _fail(group, exc)
                    continue
                # One sim's bad chunk (a value SQLite cannot store, ...) must not fail the other
                # sims' chunks that happened to share its transaction: each sim's again, alone.
                for chunks in by_sim.values():
                    await self._write_group_alone(chunks)
                continue
            except BaseException:
                _fail(group, RuntimeError("cancelled"))
                raise
            _succeed(group)

    async def _write_group_alone(self, group: list[_PendingChunk]) -> None:
        try:
            async with self.store.db.write() as tx:
                await self._write_group(tx, group)
        except Exception as exc:
            _fail(group, exc)
        except BaseException:
            _fail(group, RuntimeError("cancelled"))
            raise
        else:
            _succeed(group)

    async def _write_group(self, tx: Transaction, group: list[_PendingChunk]) -> None:
        logs = self.store.logs
        sim_ids = list(dict.fromkeys(p.sim_id for p in group))
        rows, parked = await logs.sim_rows(tx, sim_ids)

        fresh: dict[str, dict[int, _PendingChunk]] = {}
        for pending in group:
            row = rows.get(pending.sim_id)
            if row is None:
                pending.done.set_exception(NotFound(f"sim {pending.sim_id} not found"))
                continue
            if row["state"] == "pending":
                pending.done.set_exception(
                    Conflict(
                        f"sim {pending.sim_id} is pending: its simulator has not started, so it has no log yet; "
                        f"send a running heartbeat (POST /api/sims/{pending.sim_id}/heartbeat), then the log"
                    )
                )
                continue
            # (A seq past SQLite's integers never comes over HTTP, whose model refuses it; from a
            # direct caller it fails the write as any value SQLite cannot store does.)
            if MAX_AHEAD <= pending.seq - row["next_seq"] and pending.seq <= INT64_MAX:
                pending.done.set_exception(
                    Conflict(
                        f"seq {pending.seq} is {pending.seq - row['next_seq']} chunks past seq {row['next_seq']}, "
                        f"which this sim's log waits for; at most {MAX_AHEAD - 1} may wait: "
                        f"send seq {row['next_seq']} first"
                    )
                )
                continue
            chunks = fresh.setdefault(pending.sim_id, {})
            if (
                pending.seq < row["next_seq"]
                or (pending.sim_id, pending.seq) in parked
                or pending.seq in chunks
            ):
                continue  # a retry: the first chunk per seq wins
            chunks[pending.seq] = pending

        # Events are built only for runs someone watches (checked under the lock, so no
        # subscriber can appear before they are published).
        jobs: list[ParseJob] = []
        for sim_id, chunks in fresh.items():
            row = rows[sim_id]
            seq = row["next_seq"]
            in_order: list[str] = []
            while True:  # the chunks that are next, fresh or parked
                if seq in chunks:
                    in_order.append(chunks[seq].text)
                elif (sim_id, seq) in parked:
                    in_order.append(await logs.stored_text(tx, sim_id, seq))
                else:
                    break
                seq += 1
            if in_order:
                jobs.append(self._job(row, in_order, pack=True))
            if any(later > seq for later in chunks) or any(
                s_id == sim_id and later > seq for s_id, later in parked
            ):
                self._watch_gap(sim_id, seq)  # early chunks wait for chunk seq, GAP_WAIT_S at most
            else:
                self._unwatch_gap(sim_id)  # no gap (any there was has filled)
        # The chunks parsed now come back from the workers as rows; the ones parked until a gap
        # fills are made here.
        results = await self._parse(tx, jobs) if jobs else []
        packed = {(row.sim_id, row.seq): row for result in results for row in result.stored}
        stored = [
            packed[sim_id, seq] if (sim_id, seq) in packed else chunk_row(sim_id, seq, p.text)
            for sim_id, chunks in fresh.items()
            for seq, p in chunks.items()
        ]
        if jobs:
            await self._save(tx, rows, jobs, results, stored)
        else:
            await logs.insert_chunks(tx, stored)

    def _job(self, row, in_order: list[str], pack: bool = False) -> ParseJob:
        return ParseJob(
            row["id"],
            row["next_seq"],
            row["core_clock_mhz"],
            row["parser_state"],
            in_order,
            self.store.db.broker.has_subscribers(row["run_id"]),
            ShardPlacement(row["shard_first"], row["shard_warmup"]),
            row["parser_state_seq"],
            pack=pack,
        )

    async def _save(
        self,
        tx: Transaction,
        rows,
        jobs: list[ParseJob],
        results: list[ParseResult],
        chunks: list[ChunkRow],
    ) -> None:
        """Store the chunks and what their parse found, and commit: the write's last step (its
        events are built first, so that nothing can fail once it is committed)."""
        events = [
            (rows[job.sim_id]["run_id"], _events(rows[job.sim_id], job, result) if job.watched else [])
            for job, result in zip(jobs, results)
        ]
        await self.store.logs.save_parsed(
            tx,
            chunks,
            [row for result in results for row in result.kernels],
            [result.progress for result in results],
        )
        for run_id, run_events in events:
            tx.publish(run_id, run_events)

    # --- gaps that never fill ------------------------------------------------------------------

    async def watch_stored_gaps(self) -> None:
        """At start-up: the gaps a previous server left open (its timers died with it) get
        their GAP_WAIT_S again, so a sim whose missing chunks never come still goes on."""
        for sim_id, next_seq in await self.store.logs.sims_with_parked_chunks():
            self._watch_gap(sim_id, next_seq)

    def _watch_gap(self, sim_id: str, waiting_for: int | None) -> None:
        """Give the gap at chunk `waiting_for` GAP_WAIT_S to fill; a timer for an earlier gap,
        which has filled, goes (a gap's time starts when it opens, not when the first did).
        None: close the sim's gaps then, whatever chunk it waits for (a close that failed)."""
        watched = self._gap_timers.get(sim_id)
        if watched is not None and watched[0] == waiting_for:
            return
        self._unwatch_gap(sim_id)
        timer = asyncio.get_running_loop().call_later(GAP_WAIT_S, self._gap_timed_out, sim_id, waiting_for)
        self._gap_timers[sim_id] = (waiting_for, timer)

    def gap_watched(self, sim_id: str) -> int | None:
        """The chunk whose gap the sim's timer waits for, if one does."""
        watched = self._gap_timers.get(sim_id)
        return None if watched is None else watched[0]

    def _unwatch_gap(self, sim_id: str) -> None:
        if (watched := self._gap_timers.pop(sim_id, None)) is not None:
            watched[1].cancel()

    def _gap_timed_out(self, sim_id: str, waiting_for: int | None) -> None:
        self._gap_timers.pop(sim_id, None)
        task = asyncio.ensure_future(self.close_gaps(sim_id, waiting_for))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def close_gaps(self, sim_id: str, waiting_for: int | None = None) -> None:
        """Parse what arrived after the sim's gaps without them: each run of chunks that never
        arrived becomes one line saying so (stored as the first missing chunk; the others are
        stored empty), so the log, its tail and the kernels after it show. A missing chunk that
        arrives later is a repeat. Nothing to do for a sim without parked chunks. With
        `waiting_for` (a gap's timer), only when the sim still waits for that chunk: a gap that
        has opened since gets its own GAP_WAIT_S."""
        self._unwatch_gap(sim_id)
        retry_at = waiting_for  # when this fails: the chunk the sim waits for, if known
        try:
            async with self.store.db.write() as tx:
                logs = self.store.logs
                rows, parked_chunks = await logs.sim_rows(tx, [sim_id])
                row, parked = rows.get(sim_id), sorted(seq for _, seq in parked_chunks)
                if row is None or not parked:
                    return
                retry_at = row["next_seq"]
                if waiting_for is not None and row["next_seq"] != waiting_for:
                    self._watch_gap(sim_id, row["next_seq"])
                    return
                in_order: list[str] = []
                missing: list[tuple[int, str]] = []
                seq, parked_set = row["next_seq"], set(parked)
                while seq <= parked[-1]:
                    if seq in parked_set:
                        in_order.append(await logs.stored_text(tx, sim_id, seq))
                        seq += 1
                        continue
                    first = seq
                    while seq not in parked_set:
                        seq += 1
                    line = chunk_text([missing_chunks_line(first, seq - 1)])
                    missing += [(first, line)] + [(gap, "") for gap in range(first + 1, seq)]
                    in_order += [line] + ["" for _ in range(first + 1, seq)]
                log.warning(
                    "sim %s: %d log chunks never arrived; parsing the %d after them without them",
                    sim_id,
                    len(missing),
                    len(parked),
                )
                job = self._job(row, in_order)
                stored = [chunk_row(sim_id, gap, text) for gap, text in missing]
                await self._save(tx, {sim_id: row}, [job], await self._parse(tx, [job]), stored)
        except Exception:  # nobody waits on it (a timer's task, or after a final heartbeat)
            log.exception(
                "sim %s: could not close the gaps in its log; trying again in %g s", sim_id, GAP_WAIT_S
            )
            self._watch_gap(sim_id, retry_at)

    async def _parse(self, tx: Transaction, jobs: list[ParseJob]) -> list[ParseResult]:
        """Parse the jobs. A sim whose parser is not kept where it parses first reads its stored
        chunks again from its saved state on, or from the start when that state cannot be read
        (a damaged page: one damaged blob never stops a sim's log for good)."""
        deaths = 0
        while True:
            try:
                if self._pool is None:
                    return self._parsers.parse(jobs)
                return await self._pool.parse(jobs)
            except ParseWorkerDied:
                deaths += 1
                if deaths > 1:  # new workers died too: let the simulators retry (a 503)
                    raise
                log.warning("a log parse worker died: parsing the group again on new workers")
            except StateNeeded as needed:
                # A caught-up job's state stands at its next_seq, read: this ends the next time.
                jobs = [
                    await self._caught_up(tx, job, needed.damaged.get(job.sim_id))
                    if job.sim_id in needed
                    else job
                    for job in jobs
                ]

    async def _caught_up(self, tx: Transaction, job: ParseJob, damaged: str | None) -> ParseJob:
        """The job, with the parser state that its sim's stored chunks before it lead to."""
        first, state = job.state_at, job.saved_state
        if damaged is not None:
            log.warning(
                "sim %s: its saved log parser state cannot be read (%s): reading its log again",
                job.sim_id,
                damaged,
            )
            first, state = 0, None
        for start in range(first, job.next_seq, REPLAY_BATCH):  # a long log, a batch at a time
            end = min(start + REPLAY_BATCH, job.next_seq)
            chunks = await self.store.logs.stored_texts(tx, job.sim_id, start, end)
            batch = ParseJob(
                job.sim_id, start, job.core_clock_mhz, state, chunks, False, job.placement, save_state=True
            )
            [result] = await self._parse(tx, [batch])
            assert result.progress.parser_state is not None, "a batch saves its state"
            state = result.progress.parser_state
        return dataclasses.replace(job, saved_state=state, state_seq=job.next_seq)


def missing_chunks_line(first: int, last: int) -> str:
    """The line that stands in a sim's log for chunks that never arrived."""
    which = f"chunk {first}" if first == last else f"chunks {first} to {last}"
    return f"[cascade] log {which} never arrived: lines are missing here"


def _events(row, job: ParseJob, result: ParseResult) -> list[BaseModel]:
    """Per chunk: its lines, the kernels it completed, the sim's progress after it."""
    base = sim_from_row(row)
    events: list[BaseModel] = []
    for text, parsed in zip(job.chunks, result.chunks):
        events.append(LogEvent(sim_id=job.sim_id, lines=chunk_lines(text)))
        events.extend(KernelEvent(stat=stat) for stat in parsed.kernels)
        events.append(SimEvent(sim=base.model_copy(update=parsed.progress)))
    return events


def _by_sim(group: list[_PendingChunk]) -> dict[str, list[_PendingChunk]]:
    """The group's chunks that still wait for an answer, by sim."""
    by_sim: dict[str, list[_PendingChunk]] = {}
    for pending in group:
        if not pending.done.done():
            by_sim.setdefault(pending.sim_id, []).append(pending)
    return by_sim


def _fail(group: list[_PendingChunk], exc: Exception) -> None:
    for pending in group:
        if not pending.done.done():
            pending.done.set_exception(exc)


def _succeed(group: list[_PendingChunk]) -> None:
    for pending in group:
        if not pending.done.done():
            pending.done.set_result(None)
