"""The data directory of a real `cascade serve`: private to its user (results, logs, the
database and credentials readable by no one else) and free of the partial uploads a `kill -9`
during a file PUT leaves behind."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

import pytest

from tests.helpers import create_run, finished_run, wait_until

pytestmark = pytest.mark.timeout(240)


def readable_by_others(root: Path) -> list[str]:
    """Every path under `root` (itself included) with any group or other permission bit."""
    found = []
    for path in [root, *root.rglob("*")]:
        mode = path.lstat().st_mode
        if not stat.S_ISLNK(mode) and mode & 0o077:
            found.append(f"{path.relative_to(root.parent)} {stat.filemode(mode)}")
    return found


async def test_everything_in_the_data_dir_is_private(tmp_path, start_serve):
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o755)  # an older install's directory: tightened at start
    data_dir.chmod(0o755)
    server = await start_serve(
        data_dir, CASCADE_SAMPLES="1", CASCADE_LAUNCHER="local", CASCADE_REPLAY_SPEED="50"
    )
    async with server.client() as http:

        async def demo_ready():
            resp = await http.get("/api/traces/tinyformer-step-sm70")
            return resp.status_code == 200 and resp.json()["state"] == "ready"

        await wait_until(demo_ready, 120)  # through the embedded S3, mirrored into traces/
        run = await create_run(http, [("SM7_QV100", 1)])
        final = await finished_run(http, run["id"])
        assert final["state"] == "succeeded", final
        sim_id = final["sims"][0]["id"]
    # While it runs (the WAL exists only then) and after it stopped.
    for part in (
        "cascade.db",
        "cascade.db-wal",
        "s3-credentials.json",
        "s3",
        "traces/tinyformer-step-sm70",
        f"files/{sim_id}/accelsim.log.gz",
        f"workers/{sim_id}.log",
    ):
        assert (data_dir / part).exists(), part
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    assert readable_by_others(data_dir) == []
    await server.stop()
    assert readable_by_others(data_dir) == []


async def test_a_put_cut_by_kill_9_leaves_no_part_file(seeded_data_dir, start_serve):
    server = await start_serve(seeded_data_dir)
    async with server.client() as http:
        run = await create_run(http, [("SM7_QV100", 1)])
    sim_id = run["sims"][0]["id"]
    sent_first_block = asyncio.Event()

    async def body():
        yield b"x" * (1 << 20)
        sent_first_block.set()
        await asyncio.Event().wait()  # the rest never comes: the server dies first

    async def put():
        async with server.client(timeout=60) as http:
            await http.put(
                f"/api/sims/{sim_id}/files/big.bin",
                content=body(),
                headers={"Content-Type": "application/octet-stream"},
            )

    upload = asyncio.create_task(put())
    sim_dir = seeded_data_dir / "files" / sim_id
    await wait_until(lambda: sent_first_block.is_set() and list(sim_dir.glob("~big.bin.*.part")), 30)
    await server.kill()
    upload.cancel()  # its body never ends, so the client would wait on it for ever
    await asyncio.gather(upload, return_exceptions=True)
    assert len(list(sim_dir.glob("~*.part"))) == 1  # what the killed server left
    await server.start()
    assert list(sim_dir.glob("~*.part")) == []
    assert not (sim_dir / "big.bin").exists()
    async with server.client() as http:
        assert (await http.get(f"/api/sims/{sim_id}/files")).json() == []
        resp = await http.put(
            f"/api/sims/{sim_id}/files/big.bin",
            content=b"whole",
            headers={"Content-Type": "application/octet-stream"},
        )
        assert resp.status_code == 200 and (sim_dir / "big.bin").read_bytes() == b"whole"
