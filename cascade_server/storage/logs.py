"""Sim logs: chunks committed in groups, parsed in order into kernels and progress.

Chunks are committed in groups: whatever arrives while a group is being written goes into the
next one, so many simulators cost one transaction, not one each. Each sim's parser stays in
memory between groups (rebuilding it from its saved state per chunk would cost more than the
parse); a group that fails is rolled back and its sims' parsers dropped, since they may be ahead
of the database. A group that fails for several sims is written again one sim at a time, so
one sim's bad chunk fails only that sim's chunks.
"""

from __future__ import annotations

import asyncio
import json
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..accelsim_log import LogParser
from ..events import Broker
from ..shared.models import KernelEvent, LogEvent, RunDetail, SimEvent, SimMetrics
from .codecs import pack_lines, pack_state, pack_stats, sim_from_row, unpack_lines, unpack_state
from .core import NotFound, Transaction
from .sim_states import SimStateStore


@dataclass(slots=True)
class _PendingChunk:
    sim_id: str
    seq: int
    lines: list[str]
    packed: bytes  # pack_lines(lines)
    done: asyncio.Future[None]


class LogStore(SimStateStore):
    def __init__(self, path: Path, broker: Broker | None = None) -> None:
        super().__init__(path, broker)
        # sim_id -> (next_seq, parser): saves rebuilding a parser from its saved state per chunk
        self._parsers: dict[str, tuple[int, LogParser]] = {}
        self._log_queue: list[_PendingChunk] = []
        self._log_writer: asyncio.Task[None] | None = None

    async def delete_run(self, run_id: str) -> RunDetail:
        run = await super().delete_run(run_id)
        for sim in run.sims:
            self._parsers.pop(sim.id, None)  # a cached parser must not outlive its sim
        return run

    async def append_log(self, sim_id: str, seq: int, lines: list[str]) -> None:
        """Store a chunk (the first one per seq wins) and parse every chunk now in order.
        This returns once the chunk's group is committed."""
        done = asyncio.get_running_loop().create_future()
        # Packed before it joins a group: the writer holds the lock for as little work as it can.
        self._log_queue.append(_PendingChunk(sim_id, seq, lines, pack_lines(lines), done))
        if self._log_writer is None or self._log_writer.done():
            self._log_writer = asyncio.create_task(self._write_log_groups())
        await done

    async def _write_log_groups(self) -> None:
        while self._log_queue:
            group: list[_PendingChunk] = []
            try:
                async with self.write() as tx:
                    # Taken under the lock: chunks that came while it was waited for join in.
                    group, self._log_queue = self._log_queue, []
                    await self._write_log_group(tx, group)
            except Exception as exc:
                self._forget_parsers(group)
                by_sim = _by_sim(group)
                if len(by_sim) == 1:
                    _fail(group, exc)
                    continue
                # One sim's bad chunk (a value SQLite cannot store, ...) must not fail the other
                # sims' chunks that happened to share its transaction: each sim's again, alone.
                for chunks in by_sim.values():
                    await self._write_log_group_alone(chunks)
                continue
            except BaseException:
                self._forget_parsers(group)
                _fail(group, RuntimeError("cancelled"))
                raise
            _succeed(group)

    async def _write_log_group_alone(self, group: list[_PendingChunk]) -> None:
        try:
            async with self.write() as tx:
                await self._write_log_group(tx, group)
        except Exception as exc:
            self._forget_parsers(group)
            _fail(group, exc)
        except BaseException:
            self._forget_parsers(group)
            _fail(group, RuntimeError("cancelled"))
            raise
        else:
            _succeed(group)

    def _forget_parsers(self, group: list[_PendingChunk]) -> None:
        for sim_id in {p.sim_id for p in group}:
            self._parsers.pop(sim_id, None)  # in-memory parsers may be ahead of the database

    async def _write_log_group(self, tx: Transaction, group: list[_PendingChunk]) -> None:
        conn = tx.conn
        sim_ids = list(dict.fromkeys(p.sim_id for p in group))
        marks = ",".join("?" * len(sim_ids))
        async with conn.execute(f"SELECT * FROM sims WHERE id IN ({marks})", sim_ids) as cur:
            rows = {row["id"]: row for row in await cur.fetchall()}
        # Chunks stored earlier that still wait for a gap to fill (usually none).
        async with conn.execute(
            f"SELECT log_chunks.sim_id, log_chunks.seq FROM log_chunks JOIN sims ON sims.id = log_chunks.sim_id"
            f" WHERE log_chunks.sim_id IN ({marks}) AND log_chunks.seq >= sims.next_seq",
            sim_ids,
        ) as cur:
            stored = {(sim_id, seq) for sim_id, seq in await cur.fetchall()}

        fresh: dict[str, dict[int, _PendingChunk]] = {}
        for pending in group:
            row = rows.get(pending.sim_id)
            if row is None:
                pending.done.set_exception(NotFound(f"sim {pending.sim_id} not found"))
                continue
            key = (pending.sim_id, pending.seq)
            chunks = fresh.setdefault(pending.sim_id, {})
            if pending.seq < row["next_seq"] or key in stored or pending.seq in chunks:
                continue  # a retry: the first chunk per seq wins
            chunks[pending.seq] = pending
        await conn.executemany(
            "INSERT INTO log_chunks(sim_id, seq, data) VALUES (?,?,?)",
            [(sim_id, seq, p.packed) for sim_id, chunks in fresh.items() for seq, p in chunks.items()],
        )

        kernel_rows: list[tuple[Any, ...]] = []
        sim_updates: list[tuple[Any, ...]] = []
        parsed: dict[str, tuple[int, LogParser]] = {}
        for sim_id, chunks in fresh.items():
            row = rows[sim_id]
            next_seq = row["next_seq"]
            if next_seq not in chunks and (sim_id, next_seq) not in stored:
                continue  # early: it waits for the gap to fill
            cached = self._parsers.get(sim_id)
            if cached is not None and cached[0] == next_seq:
                parser = cached[1]
            else:
                parser = LogParser(row["core_clock_mhz"], state=unpack_state(row["parser_state"]))
            # Events are built only for runs someone watches (checked under the lock, so no
            # subscriber can appear before they are published).
            base = sim_from_row(row) if self.broker.has_subscribers(row["run_id"]) else None
            events: list[BaseModel] = []
            while True:
                if next_seq in chunks:
                    lines = chunks[next_seq].lines
                elif (sim_id, next_seq) in stored:
                    lines = await _stored_chunk(tx, sim_id, next_seq)
                else:
                    break
                kernels = parser.feed(lines)
                next_seq += 1
                if base is not None:
                    events.append(LogEvent(sim_id=sim_id, lines=lines))
                for kernel in kernels:
                    kernel_rows.append(
                        (
                            sim_id,
                            kernel.kernel_index,
                            kernel.kernel_name,
                            kernel.kernel_launch_uid,
                            kernel.gpu_sim_cycle,
                            kernel.gpu_sim_insn,
                            kernel.gpu_ipc,
                            kernel.sim_time_ns,
                            pack_stats(kernel.stats),
                        )
                    )
                    if base is not None:
                        events.append(KernelEvent(stat=kernel.to_stat(sim_id)))
                if base is not None:
                    events.append(SimEvent(sim=base.model_copy(update=_progress(parser))))
            tx.publish(row["run_id"], events)
            progress = _progress(parser)
            sim_updates.append(
                (
                    next_seq,
                    pack_state(parser.state()),
                    progress["kernels_done"],
                    progress["current_kernel"],
                    progress["latest"].model_dump_json(),
                    json.dumps(progress["log_tail"]),
                    sim_id,
                )
            )
            parsed[sim_id] = (next_seq, parser)
        if kernel_rows:
            await conn.executemany("INSERT OR REPLACE INTO kernels VALUES (?,?,?,?,?,?,?,?,?)", kernel_rows)
        if sim_updates:
            await conn.executemany(
                "UPDATE sims SET next_seq=?, parser_state=?, kernels_done=?, current_kernel=?,"
                " latest=?, log_tail=? WHERE id=?",
                sim_updates,
            )
        # Cached before the commit: if the commit fails, _write_log_groups drops these again.
        self._parsers.update(parsed)

    async def iter_log(self, sim_id: str, batch: int = 64) -> AsyncIterator[bytes]:
        """The sim's whole log in seq order, each line ending in a newline, a batch at a time."""
        last = -1
        while True:
            async with self.r.execute(
                "SELECT seq, data FROM log_chunks WHERE sim_id=? AND seq>? ORDER BY seq LIMIT ?",
                (sim_id, last, batch),
            ) as cur:
                rows = list(await cur.fetchall())
            if not rows:
                return
            yield b"".join(zlib.decompress(data) for _, data in rows)
            last = rows[-1][0]


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


async def _stored_chunk(tx: Transaction, sim_id: str, seq: int) -> list[str]:
    async with tx.conn.execute("SELECT data FROM log_chunks WHERE sim_id=? AND seq=?", (sim_id, seq)) as cur:
        row = await cur.fetchone()
    assert row is not None, "chunk listed as stored"
    return unpack_lines(row[0])


def _progress(parser: LogParser) -> dict[str, Any]:
    """The parser's view of a sim's progress, as SimSummary fields."""
    return {
        "kernels_done": parser.kernels_done,
        "current_kernel": parser.current_kernel,
        "latest": SimMetrics(**parser.latest),
        "log_tail": list(parser.log_tail),
    }
