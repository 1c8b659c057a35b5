"""Trace deletes are journaled and resumable, and a new trace never reuses a deleted one's files:
a real `rclone serve s3`, the real scanner loop and a real SQLite store (the e2e test kills a real
server mid-delete)."""

from __future__ import annotations

import json

from .harness import Harness, sample_files

REAL_TIMING = {
    "format": "cascade.real_timing/1",
    "kernels": [{"kernel_id": 1, "kernel_name": "_Z6kernel0v", "duration_ns": 7000.0}],
}


def upload(harness: Harness, trace_id: str) -> dict[str, bytes]:
    files = sample_files()
    harness.put_trace(trace_id, files, model="tinyformer")
    return files


def plant_old_files(harness: Harness, trace_id: str) -> None:
    """What a deleted trace of this id left: its real timing in the mirror (which the scan book of
    a new upload never lists, so mirroring alone would keep it), an old scan book."""
    harness.mirror(trace_id).mkdir(parents=True)
    (harness.mirror(trace_id) / "real_timing.json").write_text(json.dumps(REAL_TIMING))
    harness.settings.trace_books_dir.mkdir(parents=True, exist_ok=True)
    (harness.settings.trace_books_dir / f"{trace_id}.json").write_text(
        json.dumps({"old.bin": [1, "2020-01-01T00:00:00+00:00"]})
    )


async def test_a_new_upload_is_mirrored_from_nothing_left_by_a_deleted_trace(harness):
    plant_old_files(harness, "again")  # while the scanner runs: cleared before mirroring
    upload(harness, "again")
    ready = await harness.recorder.wait_state("again", "ready", "failed")
    assert (ready.state, ready.has_real_timing) == ("ready", False), ready.error
    assert not (harness.mirror("again") / "real_timing.json").exists()
    # Fetched, not trusted to a book.
    assert (harness.mirror("again") / "traces" / "kernel-3.traceg").is_file()


async def test_leftover_files_of_ids_without_a_trace_are_removed_at_startup(harness):
    upload(harness, "kept")
    await harness.recorder.wait_state("kept", "ready")
    await harness.stop()
    plant_old_files(harness, "gone")
    await harness.start()
    assert not harness.mirror("gone").exists()
    assert not (harness.settings.trace_books_dir / "gone.json").exists()
    assert (harness.mirror("kept") / "metadata.json").is_file()  # a trace's own mirror stays
    assert (harness.settings.trace_books_dir / "kept.json").is_file()


async def test_a_journaled_delete_is_finished_after_a_restart(harness):
    upload(harness, "doomed")
    await harness.recorder.wait_state("doomed", "ready")
    await harness.store.traces.reserve_trace_delete("doomed")  # the delete began, then the crash
    await harness.stop()
    await harness.start()
    assert harness.store.traces.trace_being_deleted("doomed")  # no run starts on it meanwhile
    await harness.scanner.wait_for_scan()
    assert await harness.store.traces.get_trace("doomed") is None
    assert await harness.store.traces.trace_deletes_in_progress() == []
    assert not harness.store.traces.trace_being_deleted("doomed")
    listing = harness.client.list_objects_v2(Bucket=harness.bucket, Prefix="accelsim-traces/doomed/")
    assert listing.get("KeyCount", 0) == 0
    assert not harness.mirror("doomed").exists()
    assert not (harness.settings.trace_books_dir / "doomed.json").exists()
