"""Trace ingestion end to end: a real `rclone serve s3`, the real scanner loop, a real SQLite store,
and the post-processor in its own process."""

from __future__ import annotations

import gzip
import json
import lzma

import pytest

from cascade_core.models import TraceDetail
from cascade_core.trace_kernels import parse_stats

from .harness import Harness, sample_files
from .test_trace_helpers import SM70, sample_traceg, traceg_to_raw


async def test_staged_upload_is_uploading_with_growing_counts_then_processing_then_ready(harness):
    files = sample_files()
    kernels = sorted(rel for rel in files if rel.startswith("traces/kernel-"))
    tid = "staged"
    for rel in kernels[:5]:
        harness.put(tid, rel, files[rel])
    await harness.scanner.wait_for_scan()
    first = await harness.store.traces.get_trace(tid)
    assert (first.state, first.kernel_count) == ("uploading", 5)
    assert first.bytes == sum(len(files[r]) for r in kernels[:5])

    for rel in kernels[5:]:
        harness.put(tid, rel, files[rel])
    harness.put(tid, "traces/stats.csv", files["traces/stats.csv"])
    await harness.scanner.wait_for_scan()
    second = await harness.store.traces.get_trace(tid)
    assert (second.state, second.kernel_count) == ("uploading", 15)
    assert second.bytes > first.bytes and second.created_at == first.created_at

    harness.put(tid, "traces/kernelslist.g", files["traces/kernelslist.g"])
    harness.put_metadata(
        tid,
        files,
        model="tinyformer",
        trace_gpu_arch="sm_70",
        suggested_sim_config="SM7_QV100",
        layers=["step 0"],
        gpu="synthetic",
    )
    ready = await harness.recorder.wait_state(tid, "ready", "failed")
    assert harness.recorder.states(tid) == ["uploading", "processing", "ready"], ready.error

    stored = await harness.store.traces.get_trace(tid)
    expected = parse_stats(files["traces/stats.csv"].decode())
    assert stored.kernels == expected and len(stored.kernels) == 15
    assert stored.kernels[2].name == "_Z11sgemm_tiledILi64ELi64ELi16EEvPKfS1_S1_Pfiii"
    assert (stored.model, stored.trace_gpu_arch, stored.suggested_sim_config, stored.source_gpu) == (
        "tinyformer",
        "sm_70",
        "SM7_QV100",
        "synthetic",
    )
    assert stored.layers == ["step 0"] and stored.metadata["model"] == "tinyformer"
    assert stored.error is None and not stored.has_real_timing and not stored.has_step_timeline
    # Accel-Sim reads only .traceg: the gzipped sample kernels were decompressed in the mirror.
    traces = harness.mirror(tid) / "traces"
    assert (traces / "kernel-3.traceg").read_text() == sample_traceg(3)
    assert stored.bytes >= sum(len(b) for b in files.values())


def raw_kernelslist(kernel_names: list[str]) -> bytes:
    memcpys = [
        line
        for line in (SM70 / "traces" / "kernelslist.g").read_text().splitlines()
        if line.startswith("Memcpy")
    ]
    return ("\n".join(memcpys[:3] + kernel_names) + "\n").encode()


@pytest.mark.slow
async def test_raw_tracer_output_is_post_processed_back_into_the_same_traceg(harness):
    tid = "raw-trace"
    raw1 = traceg_to_raw(sample_traceg(1), seed=1).encode()
    raw5 = traceg_to_raw(sample_traceg(5), seed=5).encode()
    raw7 = traceg_to_raw(sample_traceg(7), seed=7).encode()
    stats = (
        "\n".join(
            (SM70 / "traces" / "stats.csv").read_text().splitlines()[:1]
            + [
                line
                for line in (SM70 / "traces" / "stats.csv").read_text().splitlines()
                if line.startswith(("kernel-1.", "kernel-5.", "kernel-7."))
            ]
        )
        + "\n"
    )
    files = {
        "traces/kernelslist": raw_kernelslist(["kernel-1.trace", "kernel-5.trace.xz", "kernel-7.trace"]),
        "traces/kernel-1.trace": raw1,
        "traces/kernel-5.trace.xz": lzma.compress(raw5),
        "traces/kernel-7.trace.gz": gzip.compress(raw7),  # gzipped after tracing: also accepted
        "traces/stats.csv": stats.encode(),
    }
    harness.put_trace(tid, files)
    ready = await harness.recorder.wait_state(tid, "ready", "failed")
    assert ready.state == "ready", ready.error

    traces = harness.mirror(tid) / "traces"
    assert (traces / "kernel-1.traceg").read_text() == sample_traceg(1)
    assert lzma.decompress((traces / "kernel-5.traceg.xz").read_bytes()).decode() == sample_traceg(5)
    assert (traces / "kernel-7.traceg").read_text() == sample_traceg(7)
    kernelslist_g = (traces / "kernelslist.g").read_text().splitlines()
    assert kernelslist_g[3:] == ["kernel-1.traceg", "kernel-5.traceg.xz", "kernel-7.traceg"]
    assert [k.kernel_id for k in ready.kernels] == [1, 5, 7]
    assert ready.kernel_count == 3


async def test_unreadable_metadata_fails_the_trace(harness):
    harness.put("bad-meta", "traces/kernel-1.traceg", b"x")
    harness.put("bad-meta", "metadata.json", b"{not json")
    failed = await harness.recorder.wait_state("bad-meta", "failed", "ready")
    assert failed.state == "failed"
    assert failed.error.startswith("metadata.json is not valid JSON: ") and "\n" not in failed.error


async def test_profiler_reported_failure_fails_the_trace(harness):
    harness.put("prof-failed", "traces/kernel-1.trace", b"partial")
    harness.put(
        "prof-failed", "metadata.json", json.dumps({"status": "failed", "trace_gpu_arch": "sm_86"}).encode()
    )
    failed = await harness.recorder.wait_state("prof-failed", "failed", "ready")
    assert failed.error == "profiler reported status 'failed' in metadata.json"
    assert failed.trace_gpu_arch == "sm_86" and failed.bytes == len(b"partial") + len(
        failed_meta_bytes(failed)
    )


def failed_meta_bytes(trace: TraceDetail) -> bytes:
    return json.dumps(trace.metadata).encode()


async def test_a_listed_file_that_never_arrives_at_its_size_fails_after_the_timeout(rclone_s3, tmp_path):
    h = await Harness(rclone_s3, tmp_path, trace_upload_timeout_s=0.5).start()
    try:
        files = {"traces/kernelslist.g": b"kernel-1.traceg\n", "traces/kernel-1.traceg": b"0123456789"}
        h.put("short", "traces/kernelslist.g", files["traces/kernelslist.g"])
        h.put("short", "traces/kernel-1.traceg", b"01234")  # stops at half its size
        h.put_metadata("short", files)
        failed = await h.recorder.wait_state("short", "failed", "ready")
        assert failed.error.startswith("upload incomplete after ")
        assert failed.error.endswith("without progress: traces/kernel-1.traceg has 5 of 10 bytes")
        assert h.recorder.states("short") == ["uploading", "failed"]
    finally:
        await h.stop()


@pytest.mark.parametrize(
    "rel, body, error",
    [
        (
            "traces/kernel-1.trace",
            b"-grid dim = (1,1,1)\n-block dim = (32,1,1)\n\nnot an instruction\n",
            "post-processing failed: traces/kernel-1.trace line 4: expected 'tb_x tb_y tb_z warp ...', got 'not an instruction'",
        ),
        (
            "traces/kernel-1.trace.xz",
            b"\xfd7zXZ\x00 definitely not xz",
            "post-processing failed: traces/kernel-1.trace.xz: corrupt compressed data",
        ),
    ],
)
async def test_a_corrupt_trace_fails_post_processing_with_a_one_line_error(harness, rel, body, error):
    tid = "corrupt-" + rel.rsplit(".", 1)[-1]
    name = rel.split("/")[1]
    files = {"traces/kernelslist": raw_kernelslist([name]), rel: body}
    for r, b in files.items():
        harness.put(tid, r, b)
    harness.put_metadata(tid, files)
    failed = await harness.recorder.wait_state(tid, "failed", "ready")
    assert harness.recorder.states(tid) == ["uploading", "processing", "failed"]
    assert failed.error.startswith(error) and "\n" not in failed.error


@pytest.mark.slow
async def test_a_restart_mid_upload_resumes_without_downloading_again(harness):
    files = sample_files()
    rels = sorted(files)
    tid = "restarted"
    first_half = [r for r in rels if r.startswith("traces/kernel-")][:8]
    for rel in first_half:
        harness.put(tid, rel, files[rel])
    await harness.scanner.wait_for_scan()
    before = await harness.store.traces.get_trace(tid)
    assert before.state == "uploading" and before.kernel_count == 8
    inode = (harness.mirror(tid) / first_half[0]).stat().st_ino

    await harness.stop()
    for rel in rels:
        if rel not in first_half:
            harness.put(tid, rel, files[rel])
    harness.put_metadata(tid, files)
    await harness.start()

    ready = await harness.recorder.wait_state(tid, "ready", "failed")
    assert ready.state == "ready", ready.error
    assert ready.created_at == before.created_at and len(ready.kernels) == 15
    # The object already mirrored before the restart was not fetched again.
    assert (harness.mirror(tid) / first_half[0]).stat().st_ino == inode

    # A ready trace is not processed again after another restart.
    await harness.restart()
    await harness.scanner.wait_for_scan()
    assert tid not in harness.recorder.history or harness.recorder.history[tid][-1].state == "ready"
    assert (await harness.store.traces.get_trace(tid)).updated_at == ready.updated_at


async def test_an_invalid_trace_id_is_registered_as_failed(harness):
    harness.put("bad id!", "metadata.json", b"{}")
    failed = await harness.recorder.wait_state("bad id!", "failed", "ready")
    assert "is not valid" in failed.error
