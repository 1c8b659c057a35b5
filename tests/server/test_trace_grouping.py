"""The pure post-processor core: raw tracer lines regrouped into `.traceg`, as Accel-Sim's tool."""

from __future__ import annotations

import pytest

from cascade_server.traces.grouping import (
    TraceFormatError,
    group_raw_trace,
    lines_like_getline,
    processed_name,
    rewrite_kernelslist,
)

from .test_trace_helpers import sample_traceg, traceg_to_raw


def regroup(raw: str) -> str:
    return "".join(line + "\n" for line in group_raw_trace(lines_like_getline(raw.splitlines(keepends=True))))


@pytest.mark.parametrize("kernel", [1, 5, 7, 12])
def test_interleaved_sample_warps_regroup_to_the_original_traceg(kernel):
    original = sample_traceg(kernel)
    raw = traceg_to_raw(original, seed=kernel)
    assert raw != original
    assert regroup(raw) == original


def test_lines_like_getline_adds_the_empty_line_cpp_reads_at_eof():
    assert list(lines_like_getline(["a\n", "b\n"])) == ["a", "b", ""]
    assert list(lines_like_getline(["a\n", "b"])) == ["a", "b"]
    assert list(lines_like_getline([])) == [""]


HEADER = (
    "-kernel name = k\n-grid dim = (2,1,1)\n-block dim = (64,1,1)\n-enable lineinfo = 0\n\n#traces format\n\n"
)


def test_blocks_sorted_by_linear_id_every_warp_listed_and_unseen_blocks_skipped():
    raw = HEADER + "1 0 0 1 0010 ffffffff 0 EXIT 0 0 0\n"
    out = regroup(raw).split("\n")
    assert "thread block = 1,0,0" in out and "thread block = 0,0,0" not in out
    assert out[out.index("warp = 0") + 1] == "insts = 0"
    assert out[out.index("warp = 1") + 1 : out.index("warp = 1") + 3] == [
        "insts = 1",
        "0010 ffffffff 0 EXIT 0 0 0",
    ]


def test_only_the_second_of_each_ldgsts_pair_is_kept():
    raw = (
        HEADER
        + "".join(
            f"0 0 0 0 {pc} ffffffff 0 LDGSTS.E 2 R2 R4 16 1 0x{addr} 0\n"
            for pc, addr in [
                ("0010", "shared1"),
                ("0010", "global1"),
                ("0020", "shared2"),
                ("0020", "global2"),
            ]
        )
        + "0 0 0 0 0030 ffffffff 0 EXIT 0 0 0\n"
    )
    out = regroup(raw)
    assert "insts = 3" in out
    assert "global1" in out and "global2" in out and "shared" not in out


@pytest.mark.parametrize(
    "body, message",
    [
        ("garbage here\n", "line 8: expected 'tb_x tb_y tb_z warp ...'"),
        ("5 0 0 0 0010 ffffffff 0 EXIT 0 0 0\n", "thread block 5,0,0 is outside grid (2,1,1)"),
        ("0 0 0 2 0010 ffffffff 0 EXIT 0 0 0\n", "warp 2 is outside a block of 2 warps"),
    ],
)
def test_corrupt_lines_fail_with_the_file_and_line(body, message):
    with pytest.raises(TraceFormatError, match="^traces/kernel-1.trace ") as exc:
        list(
            group_raw_trace(
                lines_like_getline((HEADER + body).splitlines(keepends=True)), "traces/kernel-1.trace"
            )
        )
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_instruction_before_header_is_an_error():
    with pytest.raises(TraceFormatError, match="before the '-grid dim'"):
        list(group_raw_trace(["0 0 0 0 0010 ffffffff 0 EXIT 0 0 0"]))


def test_kernelslist_rewrite_matches_the_tool():
    out, kernels = rewrite_kernelslist(
        ["MemcpyHtoD,0x00007f4c5e000000,256", "", "kernel-1.trace", "kernel-2-ctx_0x55.trace.xz"]
    )
    assert out == ["MemcpyHtoD,0x00007f4c5e000000,256", "kernel-1.traceg", "kernel-2-ctx_0x55.traceg.xz"]
    assert [k.raw_name for k in kernels] == ["kernel-1.trace", "kernel-2-ctx_0x55.trace.xz"]
    assert processed_name("kernel-3.trace.gz") == "kernel-3.traceg"
    with pytest.raises(TraceFormatError, match="undefined command 'cudaFree'"):
        rewrite_kernelslist(["cudaFree"])
