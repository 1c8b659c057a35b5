"""Kernel launches from stats.csv / stats_ctx_* (and trace headers), and the post-processor's
file handling on a local directory."""

from __future__ import annotations

import gzip
import shutil

import pytest

from cascade_core.models import KernelLaunch
from cascade_core.trace_kernels import KernelStatsError, parse_stats, read_kernels
from cascade_server.traces.postprocess import PostprocessError, postprocess_trace
from cascade_server.traces.postprocess import main as postprocess_main

from .test_trace_helpers import SM70, sample_traceg, traceg_to_raw

HEADER = "kernel id, kernel mangled name, grid_dimX, grid_dimY, grid_dimZ, #blocks, block_dimX, block_dimY, block_dimZ, #threads, total_insts, total_reported_insts"


def test_sample_stats_csv_gives_fifteen_launches():
    kernels = parse_stats((SM70 / "traces" / "stats.csv").read_text())
    assert len(kernels) == 15
    assert kernels[4] == KernelLaunch(
        kernel_id=5,
        name="_Z18attn_scores_kernelPKfPfiif",
        grid=(2, 2, 4),
        block=(32, 8, 1),
        instructions=43264,
    )


def test_per_context_rows_and_a_row_cut_short():
    text = "\n".join(
        [
            HEADER,
            "kernel-1-ctx_0x6165bdd7ec90.trace.xz, _Z6vecAddPdS_S_i, 98, 1, 1, 98, 1024, 1, 1, 1024, 50066,50066",
            "kernel-2-ctx_0x6165bdd7ec90.trace.xz, _Z6vecAddPdS_S_i, 98, 1, 1, 98, 1024, 1, 1, 1024, ",
        ]
    )
    kernels = parse_stats(text)
    assert [(k.kernel_id, k.instructions) for k in kernels] == [(1, 50066), (2, None)]


def test_a_garbled_stats_row_is_a_one_line_error():
    with pytest.raises(KernelStatsError, match=r"^traces/stats.csv line 2: expected"):
        parse_stats(HEADER + "\nkernel-1.trace, name, x, 1\n", "traces/stats.csv")


def sample_instructions(kernel: int) -> int:
    """The warp instructions of a demo kernel, as its tracer's stats.csv counts them
    (total_insts), which a count of the trace's `insts = N` lines must match."""
    stats = (SM70 / "traces" / "stats.csv").read_text().splitlines()
    row = next(line for line in stats if line.startswith(f"kernel-{kernel}.trace,"))
    return int(row.split(",")[10])


def test_read_kernels_prefers_stats_files_and_falls_back_to_trace_headers(tmp_path):
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "stats_ctx_0x1").write_text(HEADER + "\nkernel-2.trace, b, 1, 1, 1, 1, 32, 1, 1, 32, 5,5\n")
    (traces / "stats_ctx_0x2").write_text(HEADER + "\nkernel-1.trace, a, 1, 1, 1, 1, 32, 1, 1, 32, 7,7\n")
    assert [k.name for k in read_kernels(tmp_path)] == ["a", "b"]

    bare = tmp_path / "bare"
    (bare / "traces").mkdir(parents=True)
    (bare / "traces" / "kernel-5.traceg").write_text(sample_traceg(5))
    (bare / "traces" / "kernelslist.g").write_text("MemcpyHtoD,0x1,4\nkernel-5.traceg\n")
    assert read_kernels(bare) == [
        KernelLaunch(
            kernel_id=5,
            name="_Z18attn_scores_kernelPKfPfiif",
            grid=(2, 2, 4),
            block=(32, 8, 1),
            instructions=sample_instructions(5),
        )
    ]


def test_postprocess_gunzips_the_samples_and_checks_kernelslist(tmp_path):
    trace = tmp_path / "t"
    shutil.copytree(SM70, trace)
    postprocess_trace(trace)
    for n in range(1, 16):
        assert (trace / "traces" / f"kernel-{n}.traceg").is_file()
    assert (trace / "traces" / "kernel-15.traceg").read_text() == sample_traceg(15)
    (trace / "traces" / "kernel-15.traceg").unlink()
    (trace / "traces" / "kernel-15.traceg.gz").unlink()
    with pytest.raises(
        PostprocessError, match="kernelslist.g names kernel-15.traceg, which is not in the upload"
    ):
        postprocess_trace(trace)


def test_postprocess_errors_are_one_line_on_stderr(tmp_path, capsys):
    trace = tmp_path / "t"
    (trace / "traces").mkdir(parents=True)
    (trace / "traces" / "kernelslist").write_text("kernel-1.trace\n")
    (trace / "traces" / "kernel-1.trace.gz").write_bytes(
        gzip.compress(traceg_to_raw(sample_traceg(1)).encode())[:200]
    )
    assert postprocess_main([str(trace)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: traces/kernel-1.trace.gz: corrupt compressed data") and err.count("\n") == 1
    assert not (trace / "traces" / "kernelslist.g").exists()
    assert not list((trace / "traces").glob(".*tmp*"))  # no half-written output left behind

    empty = tmp_path / "empty"
    (empty / "traces").mkdir(parents=True)
    assert postprocess_main([str(empty)]) == 1
    assert "neither traces/kernelslist.g nor a raw traces/kernelslist" in capsys.readouterr().err


def test_one_kernelslist_per_cuda_context(tmp_path):
    traces = tmp_path / "t" / "traces"
    traces.mkdir(parents=True)
    for ctx, kernel in (("0x1", 1), ("0x2", 5)):
        name = f"kernel-{kernel}-ctx_{ctx}.trace"
        (traces / f"kernelslist_ctx_{ctx}").write_text(f"MemcpyHtoD,0x00007f4c5e000000,256\n{name}\n")
        (traces / name).write_text(traceg_to_raw(sample_traceg(kernel)))
    postprocess_trace(tmp_path / "t")
    # As the C++ tool: the first context's list becomes kernelslist.g, the others <name>.g.
    assert (
        traces / "kernelslist.g"
    ).read_text() == "MemcpyHtoD,0x00007f4c5e000000,256\nkernel-1-ctx_0x1.traceg\n"
    assert (traces / "kernelslist_ctx_0x2.g").read_text().endswith("kernel-5-ctx_0x2.traceg\n")
    assert (traces / "kernel-5-ctx_0x2.traceg").read_text() == sample_traceg(5)
