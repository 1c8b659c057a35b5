"""Pure rules: metadata.json parsing, object keys, kernel counting and upload completeness."""

from __future__ import annotations

import json

import pytest

from cascade_core.upload_rules import trace_id_problem
from cascade_server.traces.completeness import (
    PendingFile,
    incomplete_upload_error,
    is_safe_relative_path,
    kernel_count,
    pending_files,
    split_key,
)
from cascade_server.traces.metadata import MetadataError, parse_metadata


def meta(**fields) -> bytes:
    return json.dumps(fields).encode()


def test_every_field_is_read_and_keys_are_made_relative_to_the_trace():
    m = parse_metadata(
        meta(
            status="ok",
            model="facebook/opt-125m",
            layers=["step 0 (prefill)", 3],
            gpu="NVIDIA H100 80GB HBM3",
            trace_gpu_arch="sm_90",
            suggested_sim_config="SM90_H100",
            real_gpu_config="SM90_H100",
            sample_sim_configs=["SM90_H100"],
            sample_set="opt",
            files=[
                {"key": "accelsim-traces/t/traces/kernel-1.trace", "bytes": 10},
                {"key": "traces/kernelslist", "bytes": 3},
                {"key": "accelsim-traces/t/metadata.json", "bytes": 999},
            ],
        ),
        "t",
    )
    assert m.trace_fields() == {
        "model": "facebook/opt-125m",
        "layers": ["step 0 (prefill)"],
        "source_gpu": "NVIDIA H100 80GB HBM3",
        "trace_gpu_arch": "sm_90",
        "suggested_sim_config": "SM90_H100",
        "real_gpu_config": "SM90_H100",
        "sample_sim_configs": ["SM90_H100"],
        "sample_set": "opt",
    }
    assert m.files == {"traces/kernel-1.trace": 10, "traces/kernelslist": 3}
    assert not m.failed and m.raw["model"] == "facebook/opt-125m"


def test_missing_fields_take_their_defaults_and_wrong_types_are_dropped():
    m = parse_metadata(meta(model=7, layers="x"), "t")
    assert (m.model, m.layers, m.trace_gpu_arch, m.files) == (None, [], "sm_90", {})
    assert parse_metadata(meta(status="failed"), "t").failed


@pytest.mark.parametrize(
    "raw, message",
    [
        (b"{oops", "metadata.json is not valid JSON: "),
        (b"[1, 2]", "metadata.json must hold a JSON object"),
        (b"\xff\xfe", "metadata.json is not UTF-8 text"),
        (meta(files={"a": 1}), "metadata.json 'files' must be a list"),
        (meta(files=[{"key": "traces/a", "bytes": -1}]), "metadata.json files[0] needs"),
        (meta(files=[{"key": "traces/a"}]), "metadata.json files[0] needs"),
        (meta(files=[{"key": "accelsim-traces/other/a", "bytes": 1}]), "belongs to another trace"),
    ],
)
def test_unusable_metadata_is_a_one_line_error(raw, message):
    with pytest.raises(MetadataError) as exc:
        parse_metadata(raw, "t")
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_keys_split_into_trace_and_path():
    assert split_key("accelsim-traces/t1/traces/kernel-1.trace") == ("t1", "traces/kernel-1.trace")
    assert split_key("accelsim-traces/t1/") is None
    assert split_key("accelsim-traces/loose-object") is None
    assert split_key("elsewhere/t1/a") is None
    assert not is_safe_relative_path("traces/../../etc/passwd") and is_safe_relative_path("traces/a.trace")
    assert trace_id_problem("tinyformer-step-sm70") is None and trace_id_problem("a b")


def test_kernel_count_counts_distinct_kernels_across_raw_and_processed_forms():
    paths = [
        "traces/kernel-1.trace",
        "traces/kernel-1.traceg",
        "traces/kernel-2.trace.xz",
        "traces/kernel-3-ctx_0x55fb.traceg.gz",
        "traces/kernelslist",
        "traces/stats.csv",
        "metadata.json",
    ]
    assert kernel_count(paths) == 3


def test_pending_files_and_the_timeout_message():
    pending = pending_files({"a": 10, "b": 5, "c": 1}, {"a": 10, "b": 2})
    assert pending == [PendingFile("b", 5, 2), PendingFile("c", 1, None)]
    assert incomplete_upload_error(pending, 600.2) == (
        "upload incomplete after 600 s without progress: b has 2 of 5 bytes (and 1 more listed files)"
    )
    assert PendingFile("c", 1, None).describe() == "c never arrived (expected 1 bytes)"
    assert pending_files({"a": 10}, {"a": 10, "extra": 3}) == []
