"""A full disk: every write route answers 507 with a `detail` (never a 500 with a traceback),
what was acknowledged before stays intact, and writes resume once space returns. The data
directory is a small tmpfs, filled to the last byte by a file the test then removes."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from cascade_server.faults import DISK_FULL_DETAIL
from tests.conftest import ready_trace
from tests.helpers import create_run, small_tmpfs

pytestmark = pytest.mark.timeout(120)
STEP_TIMELINE: dict[str, object] = {"simulated": {"steps": [], "summary": {}}, "compare": None}
OCTETS = {"Content-Type": "application/octet-stream"}


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "disk", "size=16m,mode=0700") as disk:
        yield disk


def fill(disk: Path) -> Path:
    """A file that takes every byte left on `disk`."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as out:
        for size in (1 << 20, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    out.write(b"\0" * size)
    with pytest.raises(OSError) as full:
        (disk / "probe").write_bytes(b"x" * 4096)
    assert full.value.errno == errno.ENOSPC
    return filler


async def test_writes_answer_507_keep_acknowledged_data_and_resume(small_disk, make_server, caplog):
    caplog.set_level(logging.WARNING)
    server = await make_server(data_dir=small_disk / "data")
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 2)])
        sim = run["sims"][0]["id"]
        sims = f"/api/sims/{sim}"
        assert (await http.post(f"{sims}/heartbeat", json={"state": "running"})).status_code == 200
        for seq in range(3):
            assert (
                await http.post(f"{sims}/logs", json={"seq": seq, "lines": [f"line {seq}"]})
            ).status_code == 204
        assert (await http.put(f"{sims}/files/out.txt", content=b"kept", headers=OCTETS)).status_code == 200
        before = (await http.get(f"/api/runs/{run['id']}")).json()

        filler = fill(small_disk)
        writes = {
            "heartbeat": lambda: http.post(f"{sims}/heartbeat", json={"state": "running"}),
            "log chunk": lambda: http.post(
                f"{sims}/logs", json={"seq": 3, "lines": ["line 3 " + "x" * 5000]}
            ),
            "file": lambda: http.put(f"{sims}/files/big.txt", content=os.urandom(1 << 20), headers=OCTETS),
            "step timeline": lambda: http.post(f"{sims}/step-timeline", json=STEP_TIMELINE),
            "new run": lambda: http.post(
                "/api/runs",
                json={
                    "trace_id": "tinyformer-step-sm70",
                    "entries": [{"gpu_config": "SM7_QV100", "count": 1}],
                },
            ),
            "cancel": lambda: http.post(f"/api/runs/{run['id']}/cancel"),
        }
        for name, write in writes.items():
            resp = await write()
            assert (resp.status_code, resp.json()) == (507, {"detail": DISK_FULL_DETAIL}), name

        # What was acknowledged is all there, unchanged.
        assert (await http.get(f"/api/runs/{run['id']}")).json() == before
        assert (await http.get(f"{sims}/log")).text == "line 0\nline 1\nline 2\n"
        assert (await http.get(f"{sims}/files/out.txt")).content == b"kept"
        assert [f["name"] for f in (await http.get(f"{sims}/files")).json()] == ["out.txt"]
        assert len((await http.get("/api/runs")).json()) == 1

        filler.unlink()  # space returns: the same writes now succeed
        expected = {
            "heartbeat": 200,
            "log chunk": 204,
            "file": 200,
            "step timeline": 204,
            "new run": 201,
            "cancel": 200,
        }
        for name, write in writes.items():
            assert (await write()).status_code == expected[name], name
        assert (await http.get(f"{sims}/log")).text.startswith("line 0\nline 1\nline 2\nline 3 ")
        assert sorted(f["name"] for f in (await http.get(f"{sims}/files")).json()) == ["big.txt", "out.txt"]
    assert list(small_disk.rglob("*.part")) == []
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    assert any("disk full" in r.getMessage() for r in caplog.records)


async def test_a_clean_restart_on_a_full_disk_reads_everything_and_writes_once_space_returns(
    small_disk, make_server, caplog
):
    caplog.set_level(logging.INFO)
    server = await make_server(data_dir=small_disk / "data")
    await server.store.traces.put_trace(ready_trace())
    new_run = {"trace_id": "tinyformer-step-sm70", "entries": [{"gpu_config": "SM7_QV100", "count": 1}]}
    async with server.client() as http:
        run = (await http.post("/api/runs", json=new_run)).json()
        sims = f"/api/sims/{run['sims'][0]['id']}"
        assert (await http.post(f"{sims}/logs", json={"seq": 0, "lines": ["line 0"]})).status_code == 204
        assert (await http.put(f"{sims}/files/out.txt", content=b"kept", headers=OCTETS)).status_code == 200
        before = (await http.get(f"/api/runs/{run['id']}")).json()
    # A clean stop folds SQLite's write-ahead log into the database file and removes it: on a
    # full disk, SQLite then cannot make the shared memory a normal open needs.
    await server.stop()
    db = server.settings.db_path
    assert not db.with_name(db.name + "-wal").exists()
    filler = fill(small_disk)
    await server.start()
    async with server.client() as http:
        assert (await http.get(f"/api/runs/{run['id']}")).json() == before
        assert (await http.get(f"{sims}/log")).text == "line 0\n"
        assert len((await http.get("/api/traces")).json()) == 1
        for write in (
            lambda: http.post("/api/runs", json=new_run),
            lambda: http.post(f"{sims}/logs", json={"seq": 1, "lines": ["line 1"]}),
            lambda: http.post(f"/api/runs/{run['id']}/cancel"),
        ):
            resp = await write()
            assert (resp.status_code, resp.json()) == (507, {"detail": DISK_FULL_DETAIL})
        # Room for a small file but not for the database (under 1 MiB free): an upload the
        # database refuses leaves the stored file, and no new one, behind.
        os.truncate(filler, filler.stat().st_size - 600_000)
        for name in ("out.txt", "new.txt"):
            resp = await http.put(f"{sims}/files/{name}", content=b"refused", headers=OCTETS)
            assert (resp.status_code, resp.json()) == (507, {"detail": DISK_FULL_DETAIL})
        assert (await http.get(f"{sims}/files/out.txt")).content == b"kept"
        assert (await http.get(f"{sims}/files/new.txt")).status_code == 404
        filler.unlink()  # space returns: the next write opens the database for writing again
        assert (await http.post("/api/runs", json=new_run)).status_code == 201
        assert (await http.post(f"{sims}/logs", json={"seq": 1, "lines": ["line 1"]})).status_code == 204
    await server.restart()
    async with server.client() as http:
        assert len((await http.get("/api/runs")).json()) == 2
        assert (await http.get(f"{sims}/log")).text == "line 0\nline 1\n"
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    said = [r.getMessage() for r in caplog.records]
    assert any("read-only: the disk is full" in m for m in said), said
    assert any("writable again" in m for m in said), said


async def test_reads_running_when_the_database_becomes_writable_finish_on_the_read_only_pair(small_disk):
    from cascade_server.storage.database import Database

    path = small_disk / "cascade.db"
    db = await Database(path).open()
    async with db.write() as tx:
        await tx.conn.execute("INSERT INTO meta(key, value) VALUES ('k', 'v')")
    await db.close()
    filler = fill(small_disk)
    db = await Database(path).open()
    try:
        assert db.read_only
        cursor = await db.r.execute("SELECT value FROM meta WHERE key='k'")  # a read under way
        filler.unlink()
        async with db.write() as tx:  # space is back: this write swaps in writable connections
            await tx.conn.execute("INSERT INTO meta(key, value) VALUES ('k2', 'v2')")
        assert not db.read_only
        assert [tuple(row) for row in await cursor.fetchall()] == [("v",)]
        await cursor.close()
        assert await db.get_meta("k2") == "v2"
    finally:
        await db.close()


async def test_sims_that_heartbeated_through_a_full_disk_are_not_lost_when_space_returns(
    small_disk, make_server
):
    """Their heartbeats were answered 507, so not stored: the silence the database shows once
    writes work again is the disk's, not the sims'."""
    server = await make_server(data_dir=small_disk / "data", heartbeat_timeout_s=2.0)  # ticks every 0.5 s
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 1)])
        sim = run["sims"][0]["id"]
        beat = {"state": "running"}
        assert (await http.post(f"/api/sims/{sim}/heartbeat", json=beat)).status_code == 200
        filler = fill(small_disk)
        refused = 0
        for _ in range(40):  # 4 s of heartbeats, two timeouts, each refused
            refused += (await http.post(f"/api/sims/{sim}/heartbeat", json=beat)).status_code == 507
            await asyncio.sleep(0.1)
        assert refused == 40
        filler.unlink()
        await asyncio.sleep(1.2)  # the monitor's ticks find writes working first
        [state] = [s["state"] for s in (await http.get(f"/api/runs/{run['id']}")).json()["sims"]]
        assert state == "running"
        for _ in range(10):  # and the heartbeats are stored again
            assert (await http.post(f"/api/sims/{sim}/heartbeat", json=beat)).status_code == 200
            await asyncio.sleep(0.1)
        [state] = [s["state"] for s in (await http.get(f"/api/runs/{run['id']}")).json()["sims"]]
        assert state == "running"
