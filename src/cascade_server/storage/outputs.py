"""What sims produce besides their log: finished kernels, uploaded files, step timelines."""

from __future__ import annotations

from cascade_core.models import (
    KernelStat,
    RunFile,
    SimFile,
    SimStepTimeline,
    SnapshotEvent,
    StepTimelineUpload,
    utcnow,
)

from ..domain_errors import NotFound
from .codecs import POWER_COLUMNS, POWER_JOIN, iso, kernel_from_row, pack, unpack
from .database import Database, Transaction
from .runs import RunRepository
from .shard_columns import OWNED_SQL


class OutputRepository:
    """What sims produce besides their log."""

    def __init__(self, db: Database, runs: RunRepository) -> None:
        self.db, self.runs = db, runs

    async def run_kernels(self, run_id: str, with_stats: bool = False) -> list[KernelStat]:
        """Every finished kernel of the run, by config, replica, then kernel: a shard's own
        kernels only, so each kernel appears once per replica."""
        columns = (
            "kernels.*"
            if with_stats
            else (
                "kernels.sim_id, kernel_index, kernel_name, kernel_launch_uid, gpu_sim_cycle,"
                " gpu_sim_insn, gpu_ipc, sim_time_ns, NULL AS stats, failed, estimated_from"
            )
        )
        async with self.db.r.execute(
            f"SELECT {columns}, {POWER_COLUMNS} FROM kernels JOIN sims ON sims.id = kernels.sim_id"
            f" {POWER_JOIN} WHERE sims.run_id=? AND {OWNED_SQL}"
            " ORDER BY sims.gpu_config, sims.label, sims.replica, kernels.kernel_index",
            (run_id,),
        ) as cur:
            return [kernel_from_row(row, with_stats) for row in await cur.fetchall()]

    async def sim_kernels(self, sim_id: str) -> list[KernelStat]:
        async with self.db.r.execute(
            f"SELECT kernels.*, {POWER_COLUMNS} FROM kernels {POWER_JOIN} WHERE sim_id=? ORDER BY kernel_index",
            (sim_id,),
        ) as cur:
            return [kernel_from_row(row, True) for row in await cur.fetchall()]

    async def snapshot(self, run_id: str) -> SnapshotEvent:
        """The run and its kernels, as an event stream starts. Call with `lock` held, then
        subscribe before releasing it, so no event is both in it and after it."""
        run = await self.runs.get_run(run_id, self.db.w)
        if run is None:
            raise NotFound(f"run {run_id} not found")
        return SnapshotEvent(run=run, kernels=await self.run_kernels(run_id))

    async def put_file(self, sim_id: str, name: str, size: int, content_type: str) -> SimFile:
        """Record a file the sim uploaded. Raises NotFound if the sim is gone, checked in the same
        write: a run deleted while the body arrived leaves no orphan row."""
        created = utcnow()
        async with self.db.write() as tx:
            await self._require_sim_in(tx, sim_id)
            await tx.conn.execute(
                "INSERT OR REPLACE INTO files(sim_id, name, size, content_type, created_at)"
                " VALUES (?,?,?,?,?)",
                (sim_id, name, size, content_type, iso(created)),
            )
        return SimFile(name=name, size=size, content_type=content_type, created_at=created)

    async def sim_files(self, sim_id: str) -> list[SimFile]:
        async with self.db.r.execute(
            "SELECT name, size, content_type, created_at FROM files WHERE sim_id=? ORDER BY name",
            (sim_id,),
        ) as cur:
            return [SimFile(**dict(row)) for row in await cur.fetchall()]

    async def run_files(self, run_id: str) -> list[RunFile]:
        async with self.db.r.execute(
            "SELECT files.*, sims.gpu_config, sims.replica, COALESCE(sims.label, sims.gpu_config) AS label"
            " FROM files JOIN sims ON sims.id = files.sim_id"
            " WHERE sims.run_id=? ORDER BY sims.gpu_config, sims.label, sims.replica, files.name",
            (run_id,),
        ) as cur:
            return [RunFile(**dict(row)) for row in await cur.fetchall()]

    async def put_step_timeline(self, sim_id: str, upload: StepTimelineUpload) -> None:
        """Raises NotFound if the sim is gone (as put_file)."""
        async with self.db.write() as tx:
            await self._require_sim_in(tx, sim_id)
            await tx.conn.execute(
                "INSERT OR REPLACE INTO step_timelines(sim_id, simulated, compare) VALUES (?,?,?)",
                (sim_id, pack(upload.simulated), None if upload.compare is None else pack(upload.compare)),
            )

    async def _require_sim_in(self, tx: Transaction, sim_id: str) -> None:
        if await self.runs.get_sim(sim_id, tx.conn) is None:
            raise NotFound(f"sim {sim_id} not found")

    async def run_step_timelines(self, run_id: str) -> list[SimStepTimeline]:
        async with self.db.r.execute(
            "SELECT step_timelines.*, sims.gpu_config, sims.replica,"
            " COALESCE(sims.label, sims.gpu_config) AS label FROM step_timelines"
            " JOIN sims ON sims.id = step_timelines.sim_id WHERE sims.run_id=?"
            " ORDER BY sims.gpu_config, sims.label, sims.replica",
            (run_id,),
        ) as cur:
            rows = await cur.fetchall()
        return [
            SimStepTimeline(
                sim_id=row["sim_id"],
                gpu_config=row["gpu_config"],
                replica=row["replica"],
                simulated=unpack(row["simulated"]),
                compare=unpack(row["compare"]),
                label=row["label"],
            )
            for row in rows
        ]
