"""Post-processing has limits: compression bombs fail their trace (and leave no output behind),
a run that takes too long fails, one trace directory is never post-processed twice at once."""

from __future__ import annotations

import fcntl
import gzip
import lzma
import os
import shutil
from pathlib import Path

import pytest

from cascade_server.settings import Settings
from cascade_server.traces.postprocess import LOCK_NAME, Limits, PostprocessError, postprocess_trace

from .harness import Harness, sample_files
from .test_trace_helpers import SM70
from .test_trace_ingest import raw_kernelslist

MiB = 1024 * 1024
RAW_HEADER = (
    b"-kernel name = bomb\n-kernel id = 1\n-grid dim = (1,1,1)\n-block dim = (32,1,1)\n"
    b"-shmem = 0\n-nregs = 8\n-binary version = 70\n-cuda stream id = 0\n-shmem base_addr = 0x0\n"
    b"-local mem base_addr = 0x0\n-nvbit version = 1.5.5\n-accelsim tracer version = 5\n"
    b"-enable lineinfo = 0\n\n#traces format = threadblock_x threadblock_y threadblock_z warpid_tb PC "
    b"mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width [adrrescompress?] [mem_addresses]\n"
)


def concatenated(member: bytes, times: int) -> bytes:
    """A compressed file of `times` copies of one compressed member (gzip and xz both read
    concatenated members as one stream): a bomb of any size, made at once."""
    return member * times


def xz_bomb_trace() -> bytes:
    """A raw kernel trace of 512 MiB of valid instruction lines, xz-compressed to well under 1 MiB."""
    line = b"0 0 0 0 0000 ffffffff 1 R1 IMAD.MOV.U32 2 R255 R255 0\n"
    chunk = line * (MiB // len(line))
    lines = len(RAW_HEADER) + 512 * len(chunk)
    assert lines > 500 * MiB
    return lzma.compress(RAW_HEADER) + concatenated(lzma.compress(chunk), 512)


@pytest.fixture
async def make_scanner(request, tmp_path):
    started: list[Harness] = []

    async def make(**settings) -> Harness:
        h = await Harness(
            request.getfixturevalue("rclone_s3"), tmp_path / str(len(started)), **settings
        ).start()
        started.append(h)
        return h

    yield make
    for h in started:
        await h.stop()


def leftovers(trace_dir: Path, *names: str) -> list[str]:
    traces = trace_dir / "traces"
    temporaries = list(trace_dir.parent.glob(f"~downloads/{trace_dir.name}.postprocess.*"))
    return sorted([p.name for p in traces.iterdir() if p.name in names] + [p.name for p in temporaries])


@pytest.mark.slow
async def test_an_xz_bomb_fails_its_trace_and_the_valid_trace_behind_it_does_not_wait(make_scanner):
    h = await make_scanner()
    bomb = xz_bomb_trace()
    assert len(bomb) < MiB
    h.put_trace(
        "aa-xz-bomb",
        {"traces/kernelslist": raw_kernelslist(["kernel-1.trace.xz"]), "traces/kernel-1.trace.xz": bomb},
    )
    h.put_trace("zz-valid", sample_files())

    failed = await h.recorder.wait_state("aa-xz-bomb", "failed", "ready")
    assert failed.error == (
        "post-processing failed: traces/kernel-1.trace.xz expands to more than 500 times "
        "its size (CASCADE_POSTPROCESS_MAX_RATIO)"
    )
    assert leftovers(h.mirror("aa-xz-bomb"), "kernel-1.traceg.xz", "kernelslist.g") == []
    valid = await h.recorder.wait_state("zz-valid", "ready", "failed")
    assert valid.state == "ready", valid.error


@pytest.mark.slow
async def test_a_gzip_bomb_traceg_never_reaches_the_disk(make_scanner):
    # 1 MiB of .traceg.gz that would become 1 GiB (here with a ratio of 100, to write less on the
    # way to the limit; the default, 500, is below gzip's maximum of 1032 as well).
    assert Settings().postprocess_max_ratio < 1000
    h = await make_scanner(postprocess_max_ratio=100)
    bomb = concatenated(gzip.compress(bytes(MiB), 9), 1024)
    assert MiB - 64 * 1024 < len(bomb) < 2 * MiB
    files = {"traces/kernelslist.g": b"kernel-1.traceg\n", "traces/kernel-1.traceg.gz": bomb}
    h.put_trace("gzip-bomb", files)

    failed = await h.recorder.wait_state("gzip-bomb", "failed", "ready")
    assert failed.error == (
        "post-processing failed: traces/kernel-1.traceg.gz expands to more than 100 times "
        "its size (CASCADE_POSTPROCESS_MAX_RATIO)"
    )
    assert leftovers(h.mirror("gzip-bomb"), "kernel-1.traceg") == []


def test_the_total_expansion_is_limited_and_a_failed_run_removes_what_it_wrote(tmp_path):
    trace = tmp_path / "t"
    shutil.copytree(SM70, trace)
    before = sorted(p.name for p in (trace / "traces").iterdir())
    with pytest.raises(PostprocessError) as failure:
        postprocess_trace(trace, Limits(max_bytes=4 * MiB))
    assert str(failure.value) == (
        "the trace's compressed files expand to more than 4194304 bytes (CASCADE_POSTPROCESS_MAX_BYTES)"
    )
    # The kernels gunzipped before the limit was crossed are gone too: nothing looks processed.
    assert sorted(p.name for p in (trace / "traces").iterdir()) == before
    postprocess_trace(trace)  # within the default limits it works
    assert (trace / "traces" / "kernel-11.traceg").stat().st_size > 4 * MiB


def test_a_killed_run_s_temporary_files_are_removed_by_the_next(tmp_path):
    trace = tmp_path / "t"
    shutil.copytree(SM70, trace)
    (tmp_path / "~downloads").mkdir()
    stale = tmp_path / "~downloads" / "t.postprocess.12345.0a1b2c3d"
    stale.write_bytes(b"half a kernel")
    uploaded = trace / "traces" / ".kernel-3.traceg.tmp-12345"  # a file of the trace, named so
    uploaded.write_bytes(b"kept")
    postprocess_trace(trace)
    assert not stale.exists() and uploaded.read_bytes() == b"kept"


async def test_a_post_processor_that_takes_too_long_fails_its_trace_and_waits_for_the_lock(make_scanner):
    h = await make_scanner(postprocess_timeout_s=1)
    # Another post-processor (of a server that is going away) holds this trace: the new one waits
    # for it, and here it never lets go, so the time limit ends the wait.
    h.mirror("locked").mkdir(parents=True)
    fd = os.open(h.mirror("locked") / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        h.put_trace("locked", sample_files())
        failed = await h.recorder.wait_state("locked", "failed", "ready")
    finally:
        os.close(fd)
    assert failed.error == "post-processing failed: took longer than 1 s (CASCADE_POSTPROCESS_TIMEOUT_S)"
    assert h.recorder.states("locked") == ["uploading", "processing", "failed"]


def test_a_memcpy_larger_than_any_gpu_fails_the_trace_naming_its_line():
    """`MemcpyHtoD,0x...,99999999999999` made the simulator spin for ever: such a trace is refused
    when it becomes ready."""
    from cascade_core.trace_inputs import memcpy_problem

    good = "MemcpyHtoD,0x00007f4c5e000000,256\nkernel-1.traceg\n"
    assert memcpy_problem(good) is None
    for bad in ("MemcpyHtoD,0x7f00,99999999999999", "MemcpyHtoD,0x7f00,12abc", "MemcpyHtoD,0x7f00"):
        problem = memcpy_problem(good + bad + "\n")
        assert problem is not None and problem.startswith("line 3: memcpy"), bad
