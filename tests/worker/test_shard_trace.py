"""Issue 23: a sim's own kernelslist.g (a shard's range; the rest after a failed kernel), and the
stand-in's shard of a recording."""

from __future__ import annotations

import shutil
from pathlib import Path

from cascade_core.models import ShardInfo
from cascade_worker import shard_trace
from cascade_worker.kernel_list import TraceList, select_lines
from cascade_worker.replay import read_lines
from cascade_worker.replay_shard import select_kernels
from tests.helpers import RECORDINGS

LIST = [
    "MemcpyHtoD,0x1,256",
    "kernel-1.traceg",
    "kernel-2.traceg",
    "MemcpyHtoD,0x2,8",
    "kernel-3.traceg",
    "kernel-4.traceg",
    "",
]


def shard_lines(lines: list[str], start: int, last: int) -> list[str]:
    return select_lines(lines, frozenset(range(start, last + 1)))


def write_shard_list(trace_list: Path, shard: ShardInfo, dest: Path) -> Path:
    start = shard.kernel_first - shard.warmup_kernels
    return TraceList(trace_list).write(range(start, shard.kernel_last + 1), dest, "kernelslist.g")


def test_shard_lines_keep_every_memcpy_where_it_stood():
    assert shard_lines(LIST, 1, 2) == [
        "MemcpyHtoD,0x1,256",
        "kernel-2.traceg",
        "MemcpyHtoD,0x2,8",
        "kernel-3.traceg",
    ]
    assert shard_lines(LIST, 0, 3) == [line for line in LIST if line]


def test_the_shard_list_links_the_trace_and_never_copies_it(tmp_path: Path):
    traces = tmp_path / "trace" / "traces"
    traces.mkdir(parents=True)
    (traces / "kernelslist.g").write_text("\n".join(LIST))
    for n in range(1, 5):
        (traces / f"kernel-{n}.traceg").write_text(f"trace {n}\n")
    shard = ShardInfo(index=1, count=2, kernel_first=2, kernel_last=3, warmup_kernels=1)
    out = write_shard_list(traces / "kernelslist.g", shard, tmp_path / "scratch")
    assert out.read_text().splitlines() == [
        "MemcpyHtoD,0x1,256",
        "kernel-2.traceg",
        "MemcpyHtoD,0x2,8",
        "kernel-3.traceg",
        "kernel-4.traceg",
    ]
    links = sorted(p.name for p in (tmp_path / "scratch").iterdir() if p.is_symlink())
    assert links == ["kernel-2.traceg", "kernel-3.traceg", "kernel-4.traceg"]
    assert (tmp_path / "scratch" / "kernel-3.traceg").read_text() == "trace 3\n"
    assert (traces / "kernelslist.g").read_text() == "\n".join(LIST)
    assert "kernels 3-4" in shard_trace.describe(shard) and "warm-up kernel 2" in shard_trace.describe(shard)


def test_a_shard_past_the_trace_is_refused(tmp_path: Path):
    (tmp_path / "kernelslist.g").write_text("kernel-1.traceg\n")
    shard = ShardInfo(index=1, count=2, kernel_first=1, kernel_last=1, warmup_kernels=1)
    try:
        write_shard_list(tmp_path / "kernelslist.g", shard, tmp_path / "out")
    except ValueError as exc:
        assert "kernel 2 is wanted" in str(exc) and "lists 1 kernels" in str(exc)
    else:
        raise AssertionError("no error")


def test_the_stand_in_replays_only_the_shards_blocks():
    lines = read_lines(RECORDINGS / "SM7_QV100.log.gz")
    picked = select_kernels(lines, 4, 6)
    names = [line for line in picked if line.startswith("kernel_name = ")]
    every = [line for line in lines if line.startswith("kernel_name = ")]
    assert names == every[4:7]
    assert picked[-1] == lines[-1] and any("exit detected" in line for line in picked)
    assert sum(1 for line in picked if line.startswith("Processing kernel ")) == 3
    assert picked[:10] == lines[:10]


ODD = [
    "# a comment naming kernel-9.traceg",
    "MemcpyHtoD,0x1,256",
    "kernel-1.traceg",
    "kernel-2.traceg",
    "MemcpyDtoH,0x00007f4c5e000000,256",
    "../../../work/atk/ESCAPED/made-by-shard",
    "  kernel-9.traceg",
    "MemcpyHtoD,0x2,8\r",
    "kernel-3.traceg",
    "",
    "kernel-4.traceg",
]


def _trace(tmp_path: Path, lines: list[str]) -> Path:
    traces = tmp_path / "trace" / "traces"
    traces.mkdir(parents=True)
    (traces / "kernelslist.g").write_bytes("\n".join(lines).encode())
    for n in range(1, 10):
        (traces / f"kernel-{n}.traceg").write_text(f"trace {n}\n")
    return traces / "kernelslist.g"


def test_only_lines_starting_with_kernel_are_kernels_as_accel_sim_reads_them(tmp_path: Path):
    """Accel-Sim's trace_parser.cc: `MemcpyHtoD...` is a memcpy, `kernel...` a kernel, any other
    line is ignored; so MemcpyDtoH, comments, a path and an indented kernel count no position."""
    assert len(TraceList(_trace(tmp_path, ODD))) == 4
    assert shard_lines(ODD, 2, 3) == [
        "MemcpyHtoD,0x1,256",
        "MemcpyHtoD,0x2,8\r",
        "kernel-3.traceg",
        "kernel-4.traceg",
    ]
    scratch = tmp_path / "work" / "scratch"
    shard = ShardInfo(index=1, count=2, kernel_first=3, kernel_last=3, warmup_kernels=1)
    out = write_shard_list(tmp_path / "trace" / "traces" / "kernelslist.g", shard, scratch)
    assert out.read_bytes() == b"MemcpyHtoD,0x1,256\nMemcpyHtoD,0x2,8\r\nkernel-3.traceg\nkernel-4.traceg\n"
    assert sorted(p.name for p in scratch.iterdir()) == [
        "kernel-3.traceg",
        "kernel-4.traceg",
        "kernelslist.g",
    ]
    assert not (tmp_path / "work" / "atk").exists() and not Path("/work/atk/ESCAPED").exists()


def test_a_kernel_line_that_is_a_path_fails_the_shard_and_makes_nothing_outside(tmp_path: Path):
    scratch = tmp_path / "a" / "b" / "scratch"
    for bad in ("kernel/../../../../ESCAPED/made-by-shard", "kernel-2.traceg\r"):
        lines = ["MemcpyHtoD,0x1,256", "kernel-1.traceg", bad, "kernel-3.traceg"]
        shard = ShardInfo(index=1, count=2, kernel_first=1, kernel_last=2, warmup_kernels=1)
        try:
            write_shard_list(_trace(tmp_path, lines), shard, scratch)
        except ValueError as exc:
            assert "line 3: kernel trace" in str(exc), exc
        else:
            raise AssertionError("no error")
        shutil.rmtree(tmp_path / "trace")
    assert not scratch.exists()
    assert list(tmp_path.rglob("*")) == []  # no folder, no link, anywhere


def test_a_list_ends_at_its_last_kernel_and_skips_the_kernels_not_chosen():
    """A memcpy after the last kernel makes Accel-Sim abort in its cleanup (`Assertion 'k'`): a
    sim's list has none, at any cut; kernels left out (a failed one) leave their memcpys."""
    trailing = [*LIST[:-1], "MemcpyHtoD,0x3,16", ""]
    for last in range(4):
        chosen = select_lines(trailing, frozenset(range(last + 1)))
        kernels = [line for line in chosen if line.startswith("kernel")]
        assert kernels[-1] == f"kernel-{last + 1}.traceg" and chosen[-1] == kernels[-1]
    assert select_lines(trailing, frozenset({0, 3})) == [
        "MemcpyHtoD,0x1,256",
        "kernel-1.traceg",
        "MemcpyHtoD,0x2,8",
        "kernel-4.traceg",
    ]
    assert select_lines(trailing, frozenset()) == []


# Real lists hold memcpys before the first kernel, between kernels (one or several) and after the
# last (these lines from the demo trace's real kernelslist.g).
WITH_MEMCPYS = [
    "MemcpyHtoD,0x00007f4c5e000000,256",
    "MemcpyHtoD,0x00007f4c5e000200,2097152",
    "kernel-1.traceg",
    "MemcpyHtoD,0x00007f4c5e200200,32768",
    "kernel-2.traceg",
    "kernel-3.traceg",
    "MemcpyHtoD,0x00007f4c5e208200,512",
    "MemcpyHtoD,0x00007f4c5e208400,512",
    "kernel-4.traceg",
    "MemcpyHtoD,0x00007f4c5e208600,196608",
    "kernel-5.traceg",
    "MemcpyHtoD,0x00007f4c5e238600,1536",
]


def test_at_every_split_point_a_list_keeps_the_memcpys_before_its_last_kernel_and_none_after():
    """Issue 32: a shard whose range ended just before a MemcpyHtoD line failed in Accel-Sim's
    cleanup (`Assertion 'k' failed`). Every range, after 0 to 2 warm-up kernels: the list is the
    trace's lines up to its last kernel, the kernels before its first left out, in order."""
    kernels = [line for line in WITH_MEMCPYS if line.startswith("kernel")]
    for first in range(len(kernels)):
        for last in range(first, len(kernels)):
            for warmup in range(3):
                start = max(0, first - warmup)
                chosen = select_lines(WITH_MEMCPYS, frozenset(range(start, last + 1)))
                end = WITH_MEMCPYS.index(kernels[last])
                expected = [
                    line
                    for line in WITH_MEMCPYS[: end + 1]
                    if not line.startswith("kernel") or kernels.index(line) >= start
                ]
                assert chosen == expected, (first, last, warmup)
                assert chosen[-1] == kernels[last]
                assert [line for line in chosen if line.startswith("kernel")] == kernels[start : last + 1]
