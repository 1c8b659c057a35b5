"""Issue 31: a trace's `kernel_count` is what the simulator will run, the kernels its
`kernelslist.g` names: kernel files (and stats rows) the list does not name are ignored, and a
list line naming a file the upload lacks fails the trace at ingest, naming the file. On the real
A100 trace in ../shared/traces-public/ (tracer v5, `.traceg.xz`, a stats.csv of every kernel),
through a real `rclone serve s3` and the real scanner."""

from __future__ import annotations

import pytest

from tests.accelsim_build import PUBLIC_TRACES

A100_TRACE = PUBLIC_TRACES / "flashinfer-gemm-sm80" / "traces"


def a100_files() -> dict[str, bytes]:
    if not (A100_TRACE / "kernelslist.g").is_file():
        pytest.skip(f"no public A100 trace in {A100_TRACE}")
    return {f"traces/{p.name}": p.read_bytes() for p in sorted(A100_TRACE.iterdir()) if p.is_file()}


async def test_the_kernel_count_is_what_kernelslist_names_not_every_file(harness):
    files = a100_files()
    listed = [2, 3, 5, 8]  # the list names 4 of the 8 kernel files; stats.csv has all 8 rows
    files["traces/kernelslist.g"] = "".join(f"kernel-{n}.traceg.xz\n" for n in listed).encode()
    harness.put_trace("a100-part", files, trace_gpu_arch="sm_80")
    ready = await harness.recorder.wait_state("a100-part", "ready", "failed")
    assert (ready.state, ready.error) == ("ready", None)
    assert ready.trace_gpu_arch == "sm_80"
    assert ready.kernel_count == 4
    assert [k.kernel_id for k in ready.kernels] == listed
    # while the files arrive, the kernel files are counted; once ready, what the list names
    before = [t.kernel_count for t in harness.recorder.history["a100-part"] if t.state != "ready"]
    assert max(before) == 8


async def test_the_whole_a100_trace_has_its_eight_kernels(harness):
    harness.put_trace("a100", a100_files(), trace_gpu_arch="sm_80")
    ready = await harness.recorder.wait_state("a100", "ready", "failed")
    assert (ready.state, ready.kernel_count, len(ready.kernels)) == ("ready", 8, 8)


async def test_a_list_line_naming_a_missing_file_fails_the_trace_naming_it(harness):
    files = a100_files()
    files["traces/kernelslist.g"] = b"kernel-1.traceg.xz\nkernel-9.traceg.xz\n"
    harness.put_trace("a100-missing", files, trace_gpu_arch="sm_80")
    failed = await harness.recorder.wait_state("a100-missing", "ready", "failed")
    assert failed.state == "failed"
    assert failed.error == (
        "post-processing failed: traces/kernelslist.g names kernel-9.traceg.xz, which is not in the upload"
    )
