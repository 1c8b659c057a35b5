"""`cascade serve` killed with SIGKILL while it post-processes a trace: the post-processor dies
with it (no orphan with ppid 1), and the next server finishes the trace with one post-processor."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from cascade_core.s3_endpoint import make_client, read_credentials_file
from cascade_core.trace_upload import build_metadata, collect_files, upload_trace
from cascade_server.traces.postprocess import LOCK_NAME
from tests.e2e.conftest import LOCAL_LAUNCHER
from tests.helpers import listening, wait_until
from tests.server.test_trace_helpers import SM70

pytestmark = pytest.mark.timeout(240)
TRACE_ID = "killed-mid-postprocess"


def postprocessors(trace_dir: Path) -> dict[int, tuple[int, str]]:
    """pid -> (ppid, state) of every live post-processor working on `trace_dir`."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            status = (entry / "status").read_text()
        except OSError:
            continue
        if b"cascade_server.traces.postprocess" in argv and str(trace_dir).encode() in argv:
            fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
            if not fields["State"].startswith("Z"):  # a zombie has exited already
                found[int(entry.name)] = (int(fields["PPid"]), fields["State"])
    return found


async def test_kill_9_the_server_mid_postprocessing(tmp_path, monkeypatch, start_serve):
    monkeypatch.setenv("CASCADE_SCAN_INTERVAL_S", "0.2")
    data_dir = tmp_path / "data"
    trace_dir = data_dir / "traces" / TRACE_ID
    trace_dir.mkdir(parents=True)
    # Stand in for a post-processor that takes a while: hold the trace's lock until the end.
    lock = os.open(trace_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    server = await start_serve(data_dir, **LOCAL_LAUNCHER)
    info = read_credentials_file(data_dir)
    files = collect_files(SM70)
    upload_trace(make_client(info), info.bucket, TRACE_ID, files, build_metadata(TRACE_ID, files, {}))

    async def processing() -> dict[int, tuple[int, str]]:
        return postprocessors(trace_dir)

    first = await wait_until(processing, 60)
    assert [ppid for ppid, _ in first.values()] == [server.pid]

    await server.kill()
    s3_port = int(server.env["CASCADE_S3_PORT"])

    async def gone() -> bool:
        return not postprocessors(trace_dir) and not listening(s3_port)

    await wait_until(gone, 30)  # it died with the server, and so did the embedded S3 endpoint

    await server.start()
    second = await wait_until(processing, 60)
    assert len(second) == 1 and [ppid for ppid, _ in second.values()] == [server.pid]
    os.close(lock)  # let it work

    async with server.client() as http:

        async def ready() -> dict | None:
            trace = (await http.get(f"/api/traces/{TRACE_ID}")).json()
            return trace if trace["state"] in ("ready", "failed") else None

        trace = await wait_until(ready, 90)
    assert trace["state"] == "ready", trace["error"]
    assert trace["kernel_count"] == 15
