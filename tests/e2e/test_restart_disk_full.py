"""A restart on a full disk (issue 19): the embedded S3 endpoint's credentials file is already
there, the same, so `cascade serve` starts, serves what it has, and says the disk is full instead
of crashing in a traceback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cascade_core.s3_endpoint import CREDENTIALS_FILE
from tests.e2e.test_disk_full import fill
from tests.helpers import free_port, small_tmpfs

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "disk", "size=48m,mode=0700") as disk:
        yield disk


# Killed, as a crash or a power cut leaves it: SQLite's -wal and -shm files stay. Stopped, its
# write-ahead log is folded into the database and removed, and a normal open would need space
# for them again: the database is then read as it is. A restart on another S3 port has a new
# credentials file to write, which the full disk refuses.
@pytest.mark.parametrize("ended", ["killed", "stopped"])
@pytest.mark.parametrize("same_s3_port", [True, False])
async def test_a_restart_on_a_full_disk_starts_and_says_so(small_disk, start_serve, ended, same_s3_port):
    data_dir = small_disk / "data"
    s3_port = str(free_port())
    server = await start_serve(data_dir, CASCADE_S3_PORT=s3_port)
    if ended == "killed":
        await server.kill()
    else:
        await server.stop()
    credentials = (data_dir / CREDENTIALS_FILE).read_bytes()
    if not same_s3_port:
        s3_port = str(free_port())

    fill(small_disk)
    server = await start_serve(data_dir, CASCADE_S3_PORT=s3_port)
    async with server.client() as http:
        assert (await http.get("/api/traces")).status_code == 200
        assert (await http.get("/api/runs")).status_code == 200
    await server.stop()
    said = server.logged()
    assert "Traceback" not in said, said
    assert f"the disk of {data_dir} is full (" in said and "read-only" in said, said
    assert (data_dir / CREDENTIALS_FILE).read_bytes() == credentials  # left as it was
    assert not [p.name for p in data_dir.iterdir() if ".tmp-" in p.name]  # no half-written file


async def test_samples_asked_for_on_a_full_disk_are_skipped_with_a_line_and_the_server_serves(
    small_disk, start_serve
):
    data_dir = small_disk / "data"
    await (await start_serve(data_dir)).stop()  # CASCADE_SAMPLES=0: no sample yet
    fill(small_disk)
    server = await start_serve(data_dir, CASCADE_SAMPLES="1")
    async with server.client() as http:
        assert (await http.get("/api/runs")).json() == []
    await server.stop()
    said = server.logged()
    assert "Traceback" not in said, said
    assert "no sample trace: the disk is full" in said, said
