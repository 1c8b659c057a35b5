"""Sim logs in: chunks committed in groups, parsed in order into kernels and progress.

The service's steps, each a module of its own:

- group_writer.py: chunks are committed in groups (whatever arrives while a group is being
  written goes into the next one, so many simulators cost one transaction, not one each); a
  group that fails for several sims is written again one sim at a time.
- chunk_order.py: which of a group's chunks are taken (the 404 and 409 rules, repeats) and which
  are next; a chunk past a gap is parked (stored, not parsed) until the gap fills, at most
  MAX_AHEAD chunks ahead.
- gaps.py: a gap still open GAP_WAIT_S later, or at the sim's final heartbeat, is closed: its
  chunks are stored empty, the sim names them (`missing_log_chunks`; the log stays what the
  simulator sent), and what came after it is parsed (`close_gaps`).
- replay.py: parsing, in the parse pool's worker process when there is one (parse_pool.py), so
  it never holds the event loop, yet inside the group's write; a parser that is not kept is
  rebuilt from its saved state and the stored chunks after it.
- live_events.py: the events of the parsed chunks, published after the commit.
- log_limit.py: a chunk past the sim's log limit keeps only its kernels, stats, failures and
  Cascade's notes, before anything else sees it.

A chunk has one form from the request to the parse workers: its text (`chunk_text`), made once
as it comes in. The chunks, the kernels they completed and each sim's parser state commit
together (storage/logs.py builds the rows), and a restarted server resumes exactly.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import lru_cache, partial
from typing import Any

from cascade_core.sampling import SimSample

from ..storage import Store, Transaction
from ..storage.codecs import chunk_text, sim_from_row
from ..storage.logs import ChunkRow, chunk_row
from . import gaps
from .chunk_order import admit, next_in_order
from .gaps import GapTimers, missing_runs
from .group_writer import GroupWriter, PendingChunk
from .live_events import Gap, chunk_events
from .log_limit import LogLimits
from .parse_pool import ParsePool
from .parsing import ParseJob, ParseResult
from .replay import ReplayingParser
from .shard_placement import ShardPlacement

log = logging.getLogger(__name__)


class LogIngest:
    def __init__(self, store: Store, pool: ParsePool | None = None, log_limit_mb: int = 0) -> None:
        self.store = store
        self.limits = LogLimits(log_limit_mb, store.logs.stored_log_size)
        # Without a pool (tests, scripts), parsing runs here, on the loop.
        self.parser = ReplayingParser(store.logs, pool)
        self._gap_timers = GapTimers(self.close_gaps)
        self._groups = GroupWriter(store.db, self._write_group)

    def close(self) -> None:
        """Stop the gap timers (the app is ending; a restarted server finds the gaps again)."""
        self._gap_timers.close()

    async def append_log(self, sim_id: str, seq: int, lines: list[str]) -> None:
        """Store a chunk (the first one per seq wins) and parse every chunk now in order.
        This returns once the chunk's group is committed."""
        await self._groups.write(sim_id, seq, await self.limits.admit(sim_id, seq, chunk_text(lines)))

    async def _write_group(self, tx: Transaction, group: list[PendingChunk]) -> None:
        logs = self.store.logs
        sim_ids = list(dict.fromkeys(p.sim_id for p in group))
        rows, parked = await logs.sim_rows(tx, sim_ids)
        fresh = admit(group, rows, parked)

        # Events are built only for runs someone watches (checked under the lock, so no
        # subscriber can appear before they are published).
        jobs: list[ParseJob] = []
        for sim_id, chunks in fresh.items():
            row = rows[sim_id]
            texts, waiting = await next_in_order(
                sim_id, row["next_seq"], chunks, parked, partial(logs.stored_text, tx)
            )
            if texts:
                jobs.append(self._job(row, texts, pack=True))
            if waiting:  # early chunks wait for the chunk after the next ones, GAP_WAIT_S at most
                self._gap_timers.watch(sim_id, row["next_seq"] + len(texts))
            else:
                self._gap_timers.unwatch(sim_id)  # no gap (any there was has filled)
        # The chunks parsed now come back from the workers as rows; the ones parked until a gap
        # fills are made here.
        results = await self.parser.parse(tx, jobs) if jobs else []
        packed = {(chunk.sim_id, chunk.seq): chunk for result in results for chunk in result.stored}
        stored = [
            packed[sim_id, seq] if (sim_id, seq) in packed else chunk_row(sim_id, seq, p.text)
            for sim_id, chunks in fresh.items()
            for seq, p in chunks.items()
        ]
        if jobs:
            await self._save(tx, rows, jobs, results, stored)
        else:
            await logs.insert_chunks(tx, stored)

    def _job(self, row: Any, texts: list[str], pack: bool = False) -> ParseJob:
        return ParseJob(
            row["id"],
            row["next_seq"],
            row["core_clock_mhz"],
            row["parser_state"],
            texts,
            self.store.db.broker.has_subscribers(row["run_id"]),
            ShardPlacement(row["shard_first"], row["shard_warmup"], row["shard_last"]),
            row["parser_state_seq"],
            pack=pack,
            estimates=_estimates(row["sampling"]) if row["sampling"] else None,
            kernel_limit=row["trace_kernels"],
            power=bool(row["power"]),
        )

    async def _save(
        self,
        tx: Transaction,
        rows: Mapping[str, Any],
        jobs: list[ParseJob],
        results: list[ParseResult],
        chunks: list[ChunkRow],
        gap: Gap | None = None,
    ) -> None:
        """Store the chunks and what their parse found, and commit: the write's last step (its
        events are built first, so that nothing can fail once it is committed). `gap`: a closed
        gap's chunks (no log event: the simulator never sent them) and what the sim now says."""
        events = [
            (
                rows[job.sim_id]["run_id"],
                chunk_events(rows[job.sim_id], job, result, *(gap or ())) if job.watched else [],
            )
            for job, result in zip(jobs, results)
        ]
        await self.store.logs.save_parsed(
            tx,
            chunks,
            [row for result in results for row in result.kernels],
            [result.progress for result in results],
            [row for result in results for row in result.power],
        )
        for run_id, run_events in events:
            tx.publish(run_id, run_events)

    # --- gaps that never fill ------------------------------------------------------------------

    async def watch_stored_gaps(self) -> None:
        """At start-up: the gaps a previous server left open (its timers died with it) get
        their GAP_WAIT_S again, so a sim whose missing chunks never come still goes on."""
        for sim_id, next_seq in await self.store.logs.sims_with_parked_chunks():
            self._gap_timers.watch(sim_id, next_seq)

    def gap_watched(self, sim_id: str) -> int | None:
        """The chunk whose gap the sim's timer waits for, if one does."""
        return self._gap_timers.watched(sim_id)

    async def close_gaps(self, sim_id: str, waiting_for: int | None = None) -> None:
        """Parse what arrived after the sim's gaps without them: the chunks that never arrived
        are stored empty and the sim names each run of them (`missing_log_chunks`, in its `sim`
        event), so the kernels after them show and the log stays exactly what the simulator sent.
        A missing chunk that arrives later is a repeat. Nothing to do for a sim without parked
        chunks. With `waiting_for` (a gap's timer), only when the sim still waits for that chunk:
        a gap that has opened since gets its own GAP_WAIT_S."""
        self._gap_timers.unwatch(sim_id)
        retry_at = waiting_for  # when this fails: the chunk the sim waits for, if known
        try:
            async with self.store.db.write() as tx:
                logs = self.store.logs
                rows, parked_chunks = await logs.sim_rows(tx, [sim_id])
                row, parked = rows.get(sim_id), sorted(seq for _, seq in parked_chunks)
                if row is None or not parked:
                    return
                retry_at = next_seq = row["next_seq"]
                if waiting_for is not None and next_seq != waiting_for:
                    self._gap_timers.watch(sim_id, next_seq)
                    return
                runs = missing_runs(next_seq, parked)
                missing = {seq for first, last in runs for seq in range(first, last + 1)}
                texts = [
                    "" if seq in missing else await logs.stored_text(tx, sim_id, seq)
                    for seq in range(next_seq, parked[-1] + 1)
                ]
                log.warning(
                    "sim %s: %d log chunks never arrived; parsing the %d after them without them",
                    sim_id,
                    len(missing),
                    len(parked),
                )
                job = self._job(row, texts)
                stored = [chunk_row(sim_id, seq, "") for seq in sorted(missing)]
                noted = [*sim_from_row(row).missing_log_chunks, *runs]
                await logs.note_missing_chunks(tx, sim_id, noted)
                results = await self.parser.parse(tx, [job])
                await self._save(
                    tx, {sim_id: row}, [job], results, stored, (missing, {"missing_log_chunks": noted})
                )
        except Exception:  # nobody waits on it (a timer's task, or after a final heartbeat)
            log.exception(
                "sim %s: could not close the gaps in its log; trying again in %g s", sim_id, gaps.GAP_WAIT_S
            )
            self._gap_timers.watch(sim_id, retry_at)


@lru_cache(maxsize=256)
def _estimates(sampling: str) -> dict[int, tuple[tuple[int, float], ...]]:
    """A sampled sim's estimates, read once per sample (every group of its chunks needs them)."""
    return SimSample.from_json(sampling).estimates
