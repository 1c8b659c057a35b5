"""Issue 19 against the real scanner, store and `rclone serve s3`: a prefix whose metadata.json
never comes fails like any stale upload; a metadata.json past its bounds fails its trace; a trace
whose metadata contradicts its own headers' arch fails; a DELETE while the S3 endpoint is known
to fail answers 503 at once and leaves the trace as it was."""

from __future__ import annotations

import json
import signal

import pytest

from cascade_server.traces import scanner as scanner_module
from tests.conftest import ready_trace
from tests.helpers import wait_until

from .harness import Harness, sample_files
from .test_embedded_s3_restart import s3_error, s3_fine

MiB = 1024 * 1024


async def test_a_prefix_without_metadata_fails_after_the_upload_timeout(rclone_s3, tmp_path):
    h = await Harness(rclone_s3, tmp_path, trace_upload_timeout_s=0.5).start()
    try:
        h.put("no-metadata", "traces/kernel-1.traceg", b"x")
        failed = await h.recorder.wait_state("no-metadata", "failed", "ready")
        assert failed.error.startswith("upload incomplete after ")
        assert failed.error.endswith(
            "metadata.json never arrived (the uploader writes it last, listing every file)"
        )
    finally:
        await h.stop()


async def test_metadata_past_its_bounds_fails_its_trace(harness):
    harness.put("big-metadata", "metadata.json", json.dumps({"layers": ["x" * 1000] * (5 * 1024)}).encode())
    files = [{"key": f"accelsim-traces/many-files/f{i}", "bytes": 1} for i in range(25_000)]
    harness.put("many-files", "metadata.json", json.dumps({"files": files}).encode())
    big = await harness.recorder.wait_state("big-metadata", "failed", "ready")
    assert big.error == "metadata.json is larger than 4 MiB"
    many = await harness.recorder.wait_state("many-files", "failed", "ready")
    assert many.error == "metadata.json lists 25000 files, more than 20000"


@pytest.mark.slow
async def test_metadata_that_contradicts_the_traced_arch_fails_the_trace(harness):
    harness.put_trace("claims-sm86", sample_files(), trace_gpu_arch="sm_86")  # the sample is sm_70
    harness.put_trace("says-nothing", sample_files(), trace_gpu_arch=None)
    failed = await harness.recorder.wait_state("claims-sm86", "failed", "ready")
    assert failed.error.startswith(
        "metadata.json says trace_gpu_arch 'sm_86', but the trace's kernels were captured for sm_70"
    )
    ready = await harness.recorder.wait_state("says-nothing", "ready", "failed")
    assert ready.trace_gpu_arch == "sm_70"


async def test_a_delete_while_the_endpoint_is_stopped_answers_503_at_once(endpoint_server, monkeypatch):
    monkeypatch.setattr(scanner_module, "STALLED_AFTER_S", 0.5)
    server, endpoint = await endpoint_server(5)
    await server.store.traces.put_trace(ready_trace("kept"))
    async with server.client(timeout=20) as http:
        assert endpoint.proc is not None
        endpoint.proc.send_signal(signal.SIGSTOP)
        await wait_until(lambda: s3_error(http))
        resp = await http.delete("/api/traces/kept")
        assert resp.status_code == 503, resp.text
        assert resp.json()["detail"].startswith(
            f"the S3 endpoint is failing (no answer from {endpoint.info.endpoint}"
        )
        assert resp.json()["detail"].endswith(
            "trace kept was not deleted; delete it again once /api/health shows no s3_error"
        )
        assert (await http.get("/api/traces/kept")).json()["state"] == "ready"
        endpoint.proc.send_signal(signal.SIGCONT)
        await wait_until(lambda: s3_fine(http))
        assert (await http.delete("/api/traces/kept")).status_code == 204
