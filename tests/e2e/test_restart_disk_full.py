"""A restart on a full disk (issue 19): the embedded S3 endpoint's credentials file is already
there, the same, so `cascade serve` starts, serves what it has, and says the disk is full instead
of crashing in a traceback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from cascade_server.shared.s3_endpoint import CREDENTIALS_FILE
from tests.e2e.test_data_dir import HEADERS, start_serve, stop
from tests.e2e.test_disk_full import fill
from tests.helpers import free_port, small_tmpfs

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    with small_tmpfs(mount, "size=48m,mode=0700"):
        yield mount


async def test_a_restart_on_a_full_disk_starts_and_says_so(small_disk, tmp_path):
    data_dir, log = small_disk / "data", tmp_path / "serve.log"
    s3_port = str(free_port())  # the same endpoint both times, as a restart has
    proc, _ = await start_serve(data_dir, log, CASCADE_S3_PORT=s3_port)
    proc.kill()  # as a crash or a power cut leaves it: SQLite's -wal and -shm files stay
    proc.wait(timeout=30)
    credentials = (data_dir / CREDENTIALS_FILE).read_bytes()

    fill(small_disk)
    start = log.stat().st_size
    proc, url = await start_serve(data_dir, log, CASCADE_S3_PORT=s3_port)
    try:
        async with httpx.AsyncClient(base_url=url, headers=HEADERS, timeout=30) as http:
            assert (await http.get("/api/traces")).status_code == 200
            assert (await http.get("/api/runs")).status_code == 200
    finally:
        stop(proc)
    said = log.read_text()[start:]
    assert "Traceback" not in said, said
    assert f"the disk of {data_dir} is full (" in said and "read-only" in said, said
    assert (data_dir / CREDENTIALS_FILE).read_bytes() == credentials  # left as it was
