"""`cascade serve` on a corrupt database (truncated, garbage header, a text file) exits non-zero
at once with one line naming the file and what to do, and never touches the file."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cascade_server.dbfile import database_problem, header_problem
from cascade_server.events import Broker
from cascade_server.storage import Store
from tests.conftest import TOKEN, ready_trace
from tests.helpers import free_port

pytestmark = pytest.mark.timeout(120)


async def real_database(path: Path) -> bytes:
    """The bytes of a real Cascade database holding a few traces, checkpointed."""
    store = await Store(path, Broker()).open()
    for n in range(20):
        await store.traces.put_trace(ready_trace(f"trace-{n}"))
    await store.close()
    return path.read_bytes()


def serve(data_dir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "CASCADE_TOKEN": TOKEN, "CASCADE_S3_PORT": str(free_port()), "CASCADE_SAMPLES": "0"}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "cascade_tui.cli",
            "serve",
            "--port",
            str(free_port()),
            "--data-dir",
            str(data_dir),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def corruptions(good: bytes) -> dict[str, bytes]:
    page = int.from_bytes(good[16:18], "big")
    return {
        "truncated to whole pages": good[: (len(good) // 2) // page * page],
        "truncated mid-page": good[: len(good) // 2 + 100],
        "garbage header": b"\xde\xad\xbe\xef" * 25 + good[100:],
        "a text file": b"this is not a database\n" * 10,
    }


async def test_the_checked_header_of_a_real_database(tmp_path):
    good = await real_database(tmp_path / "cascade.db")
    assert len(good) > 4 * int.from_bytes(good[16:18], "big")  # enough pages to cut in half
    assert database_problem(tmp_path / "cascade.db") is None
    assert database_problem(tmp_path / "missing.db") is None
    assert header_problem(b"", 0) is None  # an empty file is a new database
    problems = {name: header_problem(data[:100], len(data)) for name, data in corruptions(good).items()}
    assert all(problems.values()), problems


async def test_a_file_shorter_than_its_header_says_is_whole_while_its_write_ahead_log_has_pages(tmp_path):
    """A checkpoint the disk filled during extends the file only partly, while the write-ahead
    log still holds every page: SQLite reads them from there, so that is no truncated database
    (the advice to move it aside would lose what the log holds). The header is still checked."""
    path = tmp_path / "cascade.db"
    good = await real_database(path)
    wal = path.with_name(path.name + "-wal")
    for name, data in corruptions(good).items():
        path.write_bytes(data)
        wal.write_bytes(b"")  # an empty log adds nothing: the size is checked as before
        assert database_problem(path), name
        wal.write_bytes(b"\0" * 4096)
        problem = database_problem(path)
        assert (problem is None) == name.startswith("truncated"), (name, problem)


@pytest.mark.parametrize(
    "kind", ["truncated to whole pages", "truncated mid-page", "garbage header", "a text file"]
)
async def test_serve_refuses_a_corrupt_database_and_leaves_it_alone(tmp_path, kind):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    db = data_dir / "cascade.db"
    db.write_bytes(corruptions(await real_database(tmp_path / "good.db"))[kind])
    before = (hashlib.sha256(db.read_bytes()).hexdigest(), db.stat().st_mtime_ns, db.stat().st_mode)

    result = serve(data_dir)

    assert result.returncode != 0
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr  # one line, no traceback
    assert str(db) in lines[0] and "restore it from a backup, or move it aside" in lines[0]
    assert (hashlib.sha256(db.read_bytes()).hexdigest(), db.stat().st_mtime_ns, db.stat().st_mode) == before
    assert sorted(p.name for p in data_dir.iterdir()) == ["cascade.db"]  # no WAL, nothing else


async def test_damage_past_the_header_also_stops_serve_with_one_line(tmp_path):
    """The header is fine but the schema page is garbage: SQLite notices when the server opens
    it; the server still ends (no thread left hanging) with the same advice and no traceback."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    db = data_dir / "cascade.db"
    good = bytearray(await real_database(tmp_path / "good.db"))
    good[100:4096] = b"\xab" * (4096 - 100)
    db.write_bytes(bytes(good))
    assert database_problem(db) is None  # beyond what the header check can see
    digest = hashlib.sha256(db.read_bytes()).hexdigest()

    result = serve(data_dir)

    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"cascade serve: the database {db} is damaged")
    assert "restore it from a backup, or move it aside" in last
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest


@pytest.mark.parametrize("version", [99])
async def test_a_database_from_a_newer_cascade_stops_serve_with_one_line(tmp_path, version):
    import sqlite3

    data_dir = tmp_path / "data"
    data_dir.mkdir()
    await real_database(data_dir / "cascade.db")
    with sqlite3.connect(data_dir / "cascade.db") as conn:
        conn.execute(f"PRAGMA user_version={version}")
    done = serve(data_dir)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("cascade serve:")]
    assert f"has schema version {version}, newer than this Cascade" in line, done.stderr
