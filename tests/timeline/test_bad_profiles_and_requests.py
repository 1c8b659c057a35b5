"""Profiles that cannot be imported fail with one clear line; prefill/decode steps make requests."""

from __future__ import annotations

import gzip
import json

import pytest

from cascade_core.timeline.align import map_steps
from cascade_core.timeline.compare import compare
from cascade_core.timeline.kineto import parse_profile
from cascade_core.timeline.replay import simulate
from cascade_tui.scripting import timeline_command as timeline_import

from .profiles import write_trace_dir


def _kernel(ts: float, dur: float, corr: int, name: str = "gemm", stream: int = 7) -> list[dict]:
    launch = {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": "cudaLaunchKernel",
        "ts": ts - 5,
        "dur": 2,
        "args": {"correlation": corr},
    }
    kernel = {
        "ph": "X",
        "cat": "kernel",
        "name": name,
        "ts": ts,
        "dur": dur,
        "args": {"correlation": corr, "stream": stream},
    }
    return [launch, kernel]


def _step(name: str, ts: float, dur: float, cat: str = "user_annotation") -> dict:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur}


@pytest.mark.parametrize(
    "content, reason",
    [
        (b"PK\x03\x04 a zip file", "not a PyTorch profiler (Kineto) trace: not JSON"),
        (
            gzip.compress(b'{"schemaVersion": 1}', mtime=0),
            "not a PyTorch profiler (Kineto) trace: no 'traceEvents' list",
        ),
        (
            gzip.compress(b"\x1f\x8b truncated", mtime=0)[:20],
            "not a PyTorch profiler (Kineto) trace: broken gzip",
        ),
        (
            json.dumps({"traceEvents": [_step("ProfilerStep#1", 0, 100)]}).encode(),
            "the profile has no GPU kernels",
        ),
        (
            json.dumps({"traceEvents": _kernel(10, 5, 1)}).encode(),
            "the profile has no step annotation matching",
        ),
        # Absurd times: refused, not an overflow or a 300-digit nanosecond count.
        *[
            (
                json.dumps(
                    {"traceEvents": [_step("ProfilerStep#1", step_ts, step_dur), *_kernel(ts, dur, 1)]}
                ).encode(),
                "event ",
            )
            for step_ts, step_dur, ts, dur in [
                (0, 100, 10, 1e308),
                (0, 100, 10, -5),
                (0, 1e308, 10, 5),
                (1e300, 100, 10, 5),
                (0, 100, -1e300, 5),
                (0, 100, 10**30, 5),
                (-1e300, 1e300, 10, 5),
            ]
        ],
    ],
)
def test_a_bad_profile_fails_with_one_line(tmp_path, capsys, content, reason):
    profile = tmp_path / "trace.json.gz"
    profile.write_bytes(content)
    trace_dir = write_trace_dir(tmp_path / "trace", [{"name": "gemm", "args": {}}])
    assert timeline_import.main(["import", str(profile), str(trace_dir)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"cascade timeline import: {profile}: {reason}")
    assert len(err) < 400
    assert not (trace_dir / "corrected_timeline.json").exists()


def test_a_trace_dir_without_kernels_and_a_missing_profile_fail_with_one_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert timeline_import.main(["import", str(tmp_path / "p.json"), str(tmp_path / "empty")]) == 1
    assert "no traced kernels" in capsys.readouterr().err
    trace_dir = write_trace_dir(tmp_path / "trace", [{"name": "gemm", "args": {}}])
    assert timeline_import.main(["import", str(tmp_path / "p.json"), str(trace_dir)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No such file or directory" in err


def test_step_pattern_picks_other_annotations_and_keeps_the_outermost():
    events = [
        _step("serve_step 0", 0, 100),
        _step("serve_step 0/attention", 5, 50),
        *_kernel(10, 20, 1),
        _step("serve_step 1", 100, 100),
        *_kernel(150, 20, 2),
    ]
    steps = parse_profile({"traceEvents": events}, r"^serve_step").timeline.steps
    assert [(s.name, len(s.kernels)) for s in steps] == [("serve_step 0", 1), ("serve_step 1", 1)]


def test_prefill_and_decode_steps_make_requests():
    """Two requests: a prefill and two decodes each, kinds from user annotations inside the steps;
    a GPU-side copy of a step annotation is not a step."""
    events: list[dict] = []
    t, corr = 0.0, 0
    for kind in ["prefill", "decode", "decode", "prefill", "decode", "decode"]:
        events.append(_step(f"ProfilerStep#{corr}", t, 100))
        events.append(_step(f"ProfilerStep#{corr}", t + 1, 100, cat="gpu_user_annotation"))
        events.append(_step(f"## {kind} ##", t + 1, 50))
        for offset in (10, 40):
            corr += 1
            events += _kernel(t + offset, 20, corr, name=f"{kind}_kernel")
        t += 150  # 50 us idle between steps
    timeline = parse_profile({"traceEvents": events}).timeline
    assert [s.kind for s in timeline.steps] == ["prefill", "decode", "decode"] * 2
    trace = [(1, "prefill_kernel"), (2, "prefill_kernel"), (3, "decode_kernel"), (4, "decode_kernel")]
    mapping = map_steps(timeline.steps, trace, lambda name: name)
    simulated = simulate(timeline, mapping, {1: 10_000.0, 2: 10_000.0, 3: 20_000.0, 4: 20_000.0})
    requests = simulated["requests"]
    assert [r["steps"] for r in requests] == [[0, 1, 2], [3, 4, 5]]
    assert requests[0]["queue_ns"] == 0 and requests[1]["queue_ns"] == pytest.approx(50_000)
    assert requests[1]["decode_steps"] == 2
    assert requests[1]["wall_ns"] == pytest.approx(
        requests[1]["queue_ns"] + requests[1]["prefill_wall_ns"] + requests[1]["decode_wall_ns"]
    )
    assert set(simulated["summary"]["per_kind"]) == {"prefill", "decode"}
    compared = compare(timeline, simulated)
    assert [r["index"] for r in compared["requests"]] == [0, 1]
    assert compared["requests"][0]["real_wall_ns"] == pytest.approx(300_000)  # three 100 us steps
    assert compared["summary"]["wall_ns"]["count"] == 6


def test_compare_with_nothing_to_compare_has_null_statistics():
    timeline = parse_profile({"traceEvents": [_step("ProfilerStep#1", 0, 100), *_kernel(10, 20, 1)]}).timeline
    compared = compare(timeline, {"steps": [], "requests": []})
    assert compared["summary"]["wall_ns"]["count"] == 0
    assert compared["summary"]["wall_ns"]["mean_error_pct"] is None
    assert compared["steps"][0]["sim_wall_ns"] is None and compared["steps"][0]["wall_error_pct"] is None
