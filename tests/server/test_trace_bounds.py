"""Every reader of an uploaded trace, profile or metadata.json runs within a stated bound
(issue 19): one bounded reader (`shared.bounded_read`) for lines and whole files, CUDA's launch
limits, and metadata.json's size, file count and summary fields. Pure or on a local directory."""

from __future__ import annotations

import gzip
import io
import json
import lzma
from pathlib import Path

import pytest

from cascade_core.bounded_read import (
    TooLargeError,
    bounded_lines,
    decompress_bounded,
    read_bounded,
)
from cascade_core.timeline.kineto import ProfileError, decode_profile
from cascade_core.trace_kernels import KernelStatsError, read_kernels
from cascade_core.trace_limits import METADATA_MAX_FILES, SUMMARY_MAX_ITEMS, SUMMARY_MAX_TEXT
from cascade_server.traces.metadata import MetadataError, parse_metadata, read_metadata_file
from cascade_server.traces.postprocess import Limits, PostprocessError, postprocess_trace
from cascade_server.traces.trace_arch import arch_fields

from .test_trace_postprocess_limits import RAW_HEADER

MiB = 1024 * 1024


def gzip_of_zeros(total: int) -> bytes:
    """`total` NUL bytes gzipped, as concatenated members of 1 MiB (made at once, any size)."""
    return gzip.compress(b"\0" * MiB, mtime=0) * (total // MiB)


def trace_dir(tmp_path: Path, kernelslist: str, listed: str, name: str, body: bytes) -> Path:
    """tmp_path/"trace" whose traces/`kernelslist` lists one kernel file, `name`, holding `body`."""
    traces = tmp_path / "trace" / "traces"
    traces.mkdir(parents=True)
    (traces / kernelslist).write_text(f"{listed}\n")
    (traces / name).write_bytes(body)
    return tmp_path / "trace"


def raw_trace_dir(tmp_path: Path, name: str, body: bytes) -> Path:
    """A trace as uploaded: its kernelslist names a raw kernel trace (gzipped or not)."""
    return trace_dir(tmp_path, "kernelslist", name.removesuffix(".gz"), name, body)


def test_a_line_past_the_bound_fails_at_the_bound_not_at_its_end():
    stream = io.BufferedReader(io.BytesIO(b"ok\n" + b"\0" * (3 * MiB)))
    lines = bounded_lines(stream, "blob")
    assert next(lines) == b"ok\n"
    with pytest.raises(TooLargeError, match=r"^blob line 2 is longer than 1 MiB$"):
        next(lines)


def test_whole_reads_stop_at_their_bound(tmp_path):
    bomb = tmp_path / "bomb.gz"
    bomb.write_bytes(gzip_of_zeros(8 * MiB))
    with pytest.raises(TooLargeError, match=r"^bomb.gz expands to more than 1 MiB$"):
        read_bounded(bomb, MiB)
    plain = tmp_path / "plain.json"
    plain.write_bytes(b" " * (MiB + 1))
    with pytest.raises(TooLargeError, match=r"^plain.json is larger than 1 MiB$"):
        read_bounded(plain, MiB)
    assert read_bounded(plain, 2 * MiB) == b" " * (MiB + 1)
    with pytest.raises(TooLargeError, match=r"^x expands to more than 1 MiB$"):
        decompress_bounded(gzip_of_zeros(4 * MiB), MiB, "x")


def test_a_raw_trace_of_nuls_fails_at_its_first_mib(tmp_path):
    # 64 MiB of NULs and no newline: the post-processor once held the whole line in memory.
    trace = raw_trace_dir(tmp_path, "kernel-1.trace.gz", gzip_of_zeros(64 * MiB))
    with pytest.raises(PostprocessError, match=r"^traces/kernel-1.trace.gz line 1 is longer than 1 MiB$"):
        postprocess_trace(trace)
    assert sorted(p.name for p in (trace / "traces").iterdir()) == ["kernel-1.trace.gz", "kernelslist"]


@pytest.mark.parametrize(
    "block, why",
    [
        ((1024, 1024, 1), "block dim (1024,1024,1) has 1048576 threads, past CUDA's 1024 per block"),
        ((1, 1, 65), "block dim (1,1,65) is past CUDA's maximum (1024,1024,64)"),
        ((0, 1, 1), "a grid or block dimension below 1"),
    ],
)
def test_an_impossible_launch_shape_fails_the_raw_trace(tmp_path, block, why):
    header = RAW_HEADER.replace(b"-block dim = (32,1,1)", b"-block dim = (%d,%d,%d)" % block)
    body = header + b"".join(b"0 0 0 0 0000 ffffffff 1 R1 IMAD.MOV.U32 2 R255 R255 0\n" for _ in range(10))
    trace = raw_trace_dir(tmp_path, "kernel-1.trace", body)
    with pytest.raises(PostprocessError, match=r"^traces/kernel-1.trace line \d+: ") as failed:
        postprocess_trace(trace)
    assert str(failed.value).endswith(why)


@pytest.mark.slow
def test_a_raw_trace_that_regroups_past_its_ratio_fails(tmp_path):
    # Every instruction in its own 1,024-thread block: each becomes 32 warps of output.
    header = RAW_HEADER.replace(b"-grid dim = (1,1,1)", b"-grid dim = (65535,1,1)").replace(
        b"-block dim = (32,1,1)", b"-block dim = (1024,1,1)"
    )
    lines = b"".join(b"%d 0 0 0 0000 ffffffff 1 R1 NOP 0 0\n" % x for x in range(40_000))
    trace = raw_trace_dir(tmp_path, "kernel-1.trace.gz", gzip.compress(header + lines, mtime=0))
    with pytest.raises(
        PostprocessError, match=r"^traces/kernel-1.trace.gz regroups to more than 5 times its size"
    ):
        postprocess_trace(trace, Limits(max_ratio=5))


def processed_trace_dir(tmp_path: Path, name: str, body: bytes) -> Path:
    """A trace as post-processed: its kernelslist.g names a grouped kernel trace."""
    return trace_dir(tmp_path, "kernelslist.g", name, name, body)


def test_a_processed_trace_with_a_huge_header_line_fails_its_kernel_read(tmp_path):
    header = b"-kernel name = " + b"k" * (16 * MiB) + b"\n-kernel id = 1\n"
    trace = processed_trace_dir(tmp_path, "kernel-1.traceg.xz", lzma.compress(header, preset=1))
    with pytest.raises(KernelStatsError, match=r"^traces/kernel-1.traceg.xz line 1 is longer than 1 MiB$"):
        read_kernels(trace)


def test_a_processed_trace_with_an_impossible_block_fails_its_kernel_read(tmp_path):
    header = (
        b"-kernel name = k\n-kernel id = 1\n-grid dim = (1,1,1)\n-block dim = (1024,1024,1)\n"
        b"-binary version = 70\n\n#BEGIN_TB\n"
    )
    trace = processed_trace_dir(tmp_path, "kernel-1.traceg", header)
    with pytest.raises(KernelStatsError, match=r"1048576 threads, past CUDA's 1024 per block$"):
        read_kernels(trace)


def test_a_profile_bomb_is_refused_at_the_bound():
    with pytest.raises(ProfileError, match=r"^the profile expands to more than 256 MiB"):
        decode_profile(gzip_of_zeros(300 * MiB))


def test_metadata_is_bounded_in_size_and_in_files(tmp_path):
    big = tmp_path / "metadata.json"
    big.write_bytes(json.dumps({"model": "m", "pad": "x" * (5 * MiB)}).encode())
    with pytest.raises(MetadataError, match=r"^metadata.json is larger than 4 MiB$"):
        read_metadata_file(big, "t")
    files = [{"key": f"traces/f{i}", "bytes": 1} for i in range(METADATA_MAX_FILES + 1)]
    with pytest.raises(
        MetadataError, match=rf"^metadata.json lists {METADATA_MAX_FILES + 1} files, more than"
    ):
        parse_metadata(json.dumps({"files": files}).encode(), "t")


def test_a_summary_carries_clipped_descriptive_fields():
    layers = [f"layer {i} " + "y" * 1000 for i in range(1000)]
    meta = parse_metadata(json.dumps({"model": "m" * 5000, "layers": layers}).encode(), "t")
    fields = meta.trace_fields()
    assert len(fields["layers"]) == SUMMARY_MAX_ITEMS
    assert max(len(layer) for layer in fields["layers"]) == SUMMARY_MAX_TEXT
    assert len(fields["model"]) == SUMMARY_MAX_TEXT
    assert meta.raw["layers"] == layers  # the detail keeps them whole


def test_the_trace_header_decides_the_arch(tmp_path):
    header = b"-kernel name = k\n-kernel id = 1\n-grid dim = (1,1,1)\n-block dim = (32,1,1)\n-binary version = 86\n"
    trace = processed_trace_dir(tmp_path, "kernel-1.traceg", header)
    assert arch_fields(trace, {}) == {"trace_gpu_arch": "sm_86"}  # metadata silent: the header's
    assert arch_fields(trace, {"trace_gpu_arch": "sm_86"}) == {"trace_gpu_arch": "sm_86"}
    with pytest.raises(
        KernelStatsError,
        match=r"^metadata.json says trace_gpu_arch 'sm_70', but the "
        r"trace's kernels were captured for sm_86",
    ):
        arch_fields(trace, {"trace_gpu_arch": "sm_70"})
