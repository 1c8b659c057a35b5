"""A full disk during post-processing: the trace fails saying so, leaves no partial output, and is
processed again once space is back. The trace mirror is a real, small tmpfs (needs root and
mount; skipped with the reason otherwise)."""

from __future__ import annotations

import pytest

from tests.helpers import remount_tmpfs, small_tmpfs

from .harness import Harness, sample_files

MiB = 1024 * 1024


@pytest.fixture
def small_traces_dir(tmp_path):
    """`tmp_path/data/traces` as a 3 MiB tmpfs: room for the sm_70 sample trace's 0.6 MB of
    objects, not for its 14 MB of decompressed kernels."""
    traces = tmp_path / "data" / "traces"
    traces.mkdir(parents=True)
    with small_tmpfs(traces, "size=3m"):
        yield traces


@pytest.mark.slow
async def test_a_trace_that_failed_for_lack_of_space_is_retried_when_space_is_back(
    request, tmp_path, small_traces_dir
):
    h = await Harness(request.getfixturevalue("rclone_s3"), tmp_path).start()
    try:
        files = sample_files()
        h.put_trace("demo", files)

        failed = await h.recorder.wait_state("demo", "failed", "ready")
        assert failed.error == "post-processing failed: no space left on the disk (No space left on device)"
        # Nothing half-done is left: only the mirrored objects (and the lock).
        mirrored = {
            p.relative_to(h.mirror("demo")).as_posix() for p in h.mirror("demo").rglob("*") if p.is_file()
        }
        assert mirrored == set(files) | {"metadata.json", ".postprocess.lock"}

        # A scan with no more space than before leaves it failed.
        await h.scanner.wait_for_scan()
        assert (await h.store.traces.get_trace("demo")).state == "failed"

        assert remount_tmpfs(small_traces_dir, "size=64m").returncode == 0
        ready = await h.recorder.wait_state("demo", "ready")
        assert h.recorder.states("demo")[-3:] == ["failed", "processing", "ready"]
        assert ready.error is None and len(ready.kernels) == 15
        assert (h.mirror("demo") / "traces" / "kernel-11.traceg").stat().st_size > 8 * MiB
    finally:
        await h.stop()


@pytest.mark.slow
async def test_a_server_restarted_after_the_disk_filled_retries_at_once(request, tmp_path, small_traces_dir):
    h = await Harness(request.getfixturevalue("rclone_s3"), tmp_path).start()
    try:
        h.put_trace("demo", sample_files())
        await h.recorder.wait_state("demo", "failed", "ready")
        await h.stop()
        assert remount_tmpfs(small_traces_dir, "size=64m").returncode == 0
        await h.start()
        ready = await h.recorder.wait_state("demo", "ready")
        assert ready.error is None and len(ready.kernels) == 15
    finally:
        await h.stop()


@pytest.mark.slow
async def test_a_scan_while_the_failure_is_being_saved_keeps_the_retry(request, tmp_path, small_traces_dir):
    """The race behind this file's occasional timeout under load: a scan that ran while the
    failed state was still being written saw the trace as `processing` and forgot to retry it.
    Here a whole scan runs inside that write, every time."""
    h = await Harness(request.getfixturevalue("rclone_s3"), tmp_path).start()
    write = h.store.traces.put_trace

    async def put_trace_with_a_scan_inside(trace, real_timing=None):
        if trace.state == "failed":
            await h.scanner.wait_for_scan()
        await write(trace, real_timing)

    h.store.traces.put_trace = put_trace_with_a_scan_inside
    try:
        h.put_trace("demo", sample_files())
        await h.recorder.wait_state("demo", "failed", "ready")
        assert remount_tmpfs(small_traces_dir, "size=64m").returncode == 0
        ready = await h.recorder.wait_state("demo", "ready")
        assert h.recorder.states("demo")[-3:] == ["failed", "processing", "ready"]
        assert ready.error is None
    finally:
        await h.stop()
