"""A trace scanner over an S3 bucket of its own, with its store (the trace ingestion tests'
harness; the `harness` fixture is in tests/server/conftest.py)."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path

from cascade_core.models import TraceDetail
from cascade_core.s3_endpoint import S3Info
from cascade_server.settings import Settings
from cascade_server.storage import Store
from cascade_server.traces.scanner import TraceScanner

from .test_trace_helpers import SM70

_buckets = itertools.count()


class Recorder:
    """Every trace the scanner stores, in order; lets a test wait for a state."""

    def __init__(self) -> None:
        self.history: dict[str, list[TraceDetail]] = {}
        self.changed = asyncio.Event()

    def __call__(self, trace: TraceDetail) -> None:
        self.history.setdefault(trace.id, []).append(trace)
        self.changed.set()

    def states(self, trace_id: str) -> list[str]:
        states: list[str] = []
        for t in self.history.get(trace_id, []):
            if not states or states[-1] != t.state:
                states.append(t.state)
        return states

    async def wait_state(self, trace_id: str, *states: str, timeout: float = 60) -> TraceDetail:
        async def until() -> TraceDetail:
            while True:
                seen = self.history.get(trace_id)
                if seen and seen[-1].state in states:
                    return seen[-1]
                self.changed.clear()
                await self.changed.wait()

        return await asyncio.wait_for(until(), timeout)


class Harness:
    """One scanner (with its store) over a bucket of its own; `restart()` simulates a server
    restart on the same data dir."""

    def __init__(self, s3, tmp_path: Path, **settings) -> None:
        self.bucket = f"bucket{next(_buckets):04d}"
        self.client = s3.client()
        self.client.create_bucket(Bucket=self.bucket)
        self.info = S3Info(s3.endpoint, self.bucket, s3.access_key, s3.secret_key)
        self.settings = Settings(data_dir=tmp_path / "data", scan_interval_s=0.05, samples=False, **settings)
        self.recorder = Recorder()
        # Set by start():
        self.store: Store
        self.scanner: TraceScanner
        self.task: asyncio.Task[None]

    async def start(self) -> Harness:
        self.store = await Store(self.settings.db_path).open()
        self.scanner = TraceScanner(self.store, self.settings, self.info)
        self.scanner.listeners.append(self.recorder)
        await self.scanner.load()
        self.task = asyncio.create_task(self.scanner.run())
        return self

    async def stop(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        await self.scanner.close()
        await self.store.close()

    async def restart(self) -> None:
        await self.stop()
        await self.start()

    def put(self, trace_id: str, rel: str, body: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=f"accelsim-traces/{trace_id}/{rel}", Body=body)

    def put_metadata(self, trace_id: str, files: dict[str, bytes], **fields) -> None:
        meta = {
            "status": "ok",
            **fields,
            "files": [
                {"key": f"accelsim-traces/{trace_id}/{rel}", "bytes": len(b)} for rel, b in files.items()
            ],
        }
        self.put(trace_id, "metadata.json", json.dumps(meta).encode())

    def put_trace(self, trace_id: str, files: dict[str, bytes], **fields) -> None:
        """Every file, then the metadata.json that lists them (sm_70 unless `fields` say)."""
        for rel, body in files.items():
            self.put(trace_id, rel, body)
        self.put_metadata(trace_id, files, **{"trace_gpu_arch": "sm_70", **fields})

    def mirror(self, trace_id: str) -> Path:
        return self.settings.traces_dir / trace_id


def sample_files() -> dict[str, bytes]:
    return {
        p.relative_to(SM70).as_posix(): p.read_bytes()
        for p in sorted(SM70.rglob("*"))
        if p.is_file() and p.name != "metadata.json"
    }
