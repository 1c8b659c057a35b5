"""`cascade serve` killed with SIGKILL in the middle of `DELETE /api/traces/X` (the delete journaled,
its bucket objects partly gone, the row still `ready`) and started again: it finishes the delete,
and a new upload under the same id becomes the new trace with none of the old one's files."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
from pathlib import Path

import httpx
import pytest

from cascade_core.s3_endpoint import S3Info, make_client
from tests.helpers import free_port, wait_until
from tests.server.test_embedded_s3_restart import rclone_of
from tests.server.test_serve_cli import serve

pytestmark = pytest.mark.timeout(240)

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "accelsim-traces" / "tinyformer-step-sm70"
TRACE = SAMPLE.name
PREFIX = f"accelsim-traces/{TRACE}/"
REAL_TIMING = {
    "format": "cascade.real_timing/1",
    "kernels": [
        {"kernel_id": 1, "kernel_name": "_Z16embedding_kernelPKiPK6float4S3_PS1_ii", "duration_ns": 7000.0}
    ],
}


def upload(info: S3Info, *, real_timing: bool) -> None:
    """The sample trace's files (with a real_timing.json when asked), metadata.json last."""
    s3 = make_client(info)
    metadata = json.loads((SAMPLE / "metadata.json").read_text())
    for path in sorted(p for p in SAMPLE.rglob("*") if p.is_file() and p.name != "metadata.json"):
        s3.put_object(
            Bucket=info.bucket, Key=PREFIX + path.relative_to(SAMPLE).as_posix(), Body=path.read_bytes()
        )
    if real_timing:
        body = json.dumps(REAL_TIMING).encode()
        s3.put_object(Bucket=info.bucket, Key=PREFIX + "real_timing.json", Body=body)
        metadata["files"].append({"key": PREFIX + "real_timing.json", "bytes": len(body)})
    s3.put_object(Bucket=info.bucket, Key=PREFIX + "metadata.json", Body=json.dumps(metadata).encode())


def bucket_keys(info: S3Info) -> list[str]:
    listing = make_client(info).list_objects_v2(Bucket=info.bucket, Prefix=PREFIX)
    return [obj["Key"] for obj in listing.get("Contents", [])]


def journaled(db: Path) -> bool:
    with contextlib.closing(sqlite3.connect(db, timeout=10)) as conn:
        return conn.execute("SELECT 1 FROM trace_deletes WHERE trace_id=?", (TRACE,)).fetchone() is not None


async def ready_trace(http: httpx.AsyncClient) -> dict:
    async def ready():
        resp = await http.get(f"/api/traces/{TRACE}")
        assert resp.status_code in (200, 404), resp.text
        body = resp.json()
        assert resp.status_code == 404 or body["state"] != "failed", body
        return resp.status_code == 200 and body["state"] == "ready" and body

    return await wait_until(ready, 120)


async def test_kill_9_mid_delete_then_the_same_id_uploaded_again(tmp_path):
    data_dir = tmp_path / "data"
    proc = serve(data_dir, CASCADE_S3_PORT=str(free_port()), CASCADE_SCAN_INTERVAL_S="0.2")
    try:
        await proc.start()
        info = proc.s3_info()
        async with proc.client() as http:
            upload(info, real_timing=True)
            old = await ready_trace(http)
            assert old["has_real_timing"] is True
            assert (data_dir / "traces" / TRACE / "real_timing.json").is_file()

            # Freeze the endpoint so the delete stops inside the bucket step, journaled, and kill
            # the server there: the worst moment (objects going, the row still `ready`).
            rclone = rclone_of(proc.pid)
            assert rclone is not None
            os.kill(rclone, signal.SIGSTOP)
            delete = asyncio.create_task(http.delete(f"/api/traces/{TRACE}"))
            await wait_until(lambda: journaled(data_dir / "cascade.db"))
            await proc.kill()
            os.kill(rclone, signal.SIGKILL)
            with pytest.raises(httpx.TransportError):
                await delete
    finally:
        await proc.kill()
    # As the attacker found it: some objects gone from the bucket (rclone keeps them as files),
    # three left; and files left in the mirror of an id whose delete had committed.
    objects = sorted(p for p in (data_dir / "s3" / info.bucket / PREFIX).rglob("*") if p.is_file())
    assert len(objects) > 3, objects  # the frozen endpoint deleted none of them
    for path in objects[3:]:
        path.unlink()
    stale = data_dir / "traces" / "deleted-before" / "real_timing.json"
    stale.parent.mkdir(parents=True)
    stale.write_text(json.dumps(REAL_TIMING))

    try:
        await proc.start()
        async with proc.client() as http:

            async def deleted():
                return (await http.get(f"/api/traces/{TRACE}")).status_code == 404 and not journaled(
                    data_dir / "cascade.db"
                )

            await wait_until(deleted)
            assert bucket_keys(info) == []
            assert not (data_dir / "traces" / TRACE).exists()
            assert not (data_dir / "trace-scan" / f"{TRACE}.json").exists()
            assert not stale.parent.exists()  # removed at startup: no trace has that id

            # The same id uploaded again, without real timing: the new trace, none of the old files.
            upload(info, real_timing=False)
            new = await ready_trace(http)
            assert new["has_real_timing"] is False
            assert new["created_at"] > old["created_at"]
            assert not (data_dir / "traces" / TRACE / "real_timing.json").exists()
            assert "real_timing.json" not in json.loads(
                (data_dir / "trace-scan" / f"{TRACE}.json").read_text()
            )
    finally:
        assert await proc.stop() == 0, proc.logged()
