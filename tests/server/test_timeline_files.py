"""One rule for where a trace keeps its timing files: the trace's flags and `/comparison` agree."""

from __future__ import annotations

import json

from cascade_core.trace_layout import locate
from cascade_server.traces.ready_fields import ready_fields


def _metadata(trace_id: str, *rels: str) -> dict:
    return {
        "status": "ok",
        "files": [{"key": f"accelsim-traces/{trace_id}/{rel}", "bytes": 1} for rel in rels],
    }


async def test_timing_files_are_found_where_metadata_lists_them(tmp_path):
    trace_dir = tmp_path / "t1"
    (trace_dir / "traces").mkdir(parents=True)
    (trace_dir / "traces" / "stats.csv").write_text("kernel-1.trace, _Z1kv, 1, 1, 1, 1, 32, 1, 1, 32, 10\n")
    real = {"kernels": [{"kernel_id": 1, "kernel_name": "_Z1kv", "duration_ns": 1500.0}]}
    for name, body in (
        ("real_timing.json", real),
        ("corrected_timeline.json", {}),
        ("kernel_mapping.json", {}),
    ):
        (trace_dir / "traces" / name).write_text(json.dumps(body))
    metadata = _metadata(
        "t1",
        "traces/stats.csv",
        "traces/real_timing.json",
        "traces/corrected_timeline.json",
        "traces/kernel_mapping.json",
    )
    (trace_dir / "metadata.json").write_text(json.dumps(metadata))
    described, rows = await ready_fields(trace_dir, metadata, 60)
    assert described["has_real_timing"] and described["has_step_timeline"]
    assert rows == [(1, "_Z1kv", 1500.0)] and described["real_timing_error"] is None
    # Without the metadata argument it is read from the trace directory: the worker's way.
    assert locate(trace_dir, "real_timing.json") == trace_dir / "traces" / "real_timing.json"


async def test_an_unlisted_file_deep_in_the_trace_is_not_real_timing(tmp_path):
    trace_dir = tmp_path / "t2"
    (trace_dir / "other").mkdir(parents=True)
    (trace_dir / "other" / "real_timing.json").write_text("[]")
    metadata = _metadata("t2", "other/x.txt")
    described, rows = await ready_fields(trace_dir, metadata, 60)
    assert not described["has_real_timing"] and rows == [] and described["real_timing_error"] is None
    # At the trace's root it counts even when metadata.json does not list it (a hand-made trace).
    (trace_dir / "real_timing.json").write_text(json.dumps([{"kernel_id": 1, "duration_ns": 2.0}]))
    described, rows = await ready_fields(trace_dir, metadata, 60)
    assert described["has_real_timing"] and rows == [(1, None, 2.0)]


async def test_a_real_timing_file_that_is_not_json_gives_no_real_timing_and_says_why(tmp_path):
    """Issue 32: a real_timing.json that was not JSON kept `has_real_timing: true` (and every
    `/comparison` parsed it again, to no avail)."""
    trace_dir = tmp_path / "t3"
    trace_dir.mkdir()
    (trace_dir / "real_timing.json").write_text("kernel,duration\ngemm,7000\n")
    described, rows = await ready_fields(trace_dir, {"status": "ok"}, 60)
    assert (described["has_real_timing"], rows) == (False, [])
    assert described["real_timing_error"].startswith("real_timing.json is not JSON: Expecting value")
