"""One rule for where a trace keeps its timing files: the trace's flags and `/comparison` agree."""

from __future__ import annotations

import json

from cascade_core.trace_layout import load_real_timing, locate
from cascade_server.traces.scanner import describe_processed


def _metadata(trace_id: str, *rels: str) -> dict:
    return {
        "status": "ok",
        "files": [{"key": f"accelsim-traces/{trace_id}/{rel}", "bytes": 1} for rel in rels],
    }


def test_timing_files_are_found_where_metadata_lists_them(tmp_path):
    trace_dir = tmp_path / "t1"
    (trace_dir / "traces").mkdir(parents=True)
    (trace_dir / "traces" / "stats.csv").write_text("kernel-1.trace, _Z1kv, 1, 1, 1, 1, 32, 1, 1, 32, 10\n")
    real = {"kernels": [{"kernel_id": 1, "kernel_name": "k", "duration_ns": 1500.0}]}
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
    described = describe_processed(trace_dir, metadata)
    assert described["has_real_timing"] and described["has_step_timeline"]
    assert load_real_timing(trace_dir, metadata) == [("k", 1500.0)]
    # Without the metadata argument it is read from the trace directory: the worker's way.
    assert locate(trace_dir, "real_timing.json") == trace_dir / "traces" / "real_timing.json"


def test_an_unlisted_file_deep_in_the_trace_is_not_real_timing(tmp_path):
    trace_dir = tmp_path / "t2"
    (trace_dir / "other").mkdir(parents=True)
    (trace_dir / "other" / "real_timing.json").write_text("[]")
    metadata = _metadata("t2", "other/x.txt")
    assert not describe_processed(trace_dir, metadata)["has_real_timing"]
    assert load_real_timing(trace_dir, metadata) is None
    # At the trace's root it counts even when metadata.json does not list it (a hand-made trace).
    (trace_dir / "real_timing.json").write_text(json.dumps([{"kernel_id": 1, "duration_ns": 2.0}]))
    assert describe_processed(trace_dir, metadata)["has_real_timing"]
    assert load_real_timing(trace_dir, metadata) == [(None, 2.0)]


def test_real_timing_that_times_no_kernel_is_no_real_timing(tmp_path):
    """Issue 32: a `real_timing.json` whose kernels have no usable duration (null, text, NaN) times
    nothing: the trace has no real timing (its notes never offer accuracy), and `/comparison` says
    so too, while still naming the kernels."""
    from cascade_server.services.run_comparison import comparison
    from tests.conftest import ready_trace
    from tests.tui.factories import run as run_detail
    from tests.tui.factories import sim

    trace_dir = tmp_path / "t3"
    trace_dir.mkdir()
    untimed = [
        {"kernel_id": 1, "kernel_name": "k1", "duration_ns": None},
        {"kernel_id": 2, "kernel_name": "k2", "duration_ns": "fast"},
        {"kernel_id": 3, "kernel_name": "k3"},
    ]
    (trace_dir / "real_timing.json").write_text(json.dumps(untimed))
    metadata = _metadata("t3", "real_timing.json")
    assert not describe_processed(trace_dir, metadata)["has_real_timing"]
    real = load_real_timing(trace_dir, metadata)
    assert real == [("k1", None), ("k2", None), ("k3", None)]
    detail = run_detail([sim()]).model_copy(update={"trace": ready_trace().summary()})
    compared = comparison(detail, [], real)
    assert compared.has_real_timing is False and [r.kernel_name for r in compared.rows] == ["k1", "k2", "k3"]
    # One timed kernel is real timing.
    untimed[1]["duration_ns"] = 1500.0
    (trace_dir / "real_timing.json").write_text(json.dumps(untimed))
    assert describe_processed(trace_dir, metadata)["has_real_timing"]
    assert comparison(detail, [], load_real_timing(trace_dir, metadata)).has_real_timing is True
