"""`cascade upload` of a folder copied from a demo trace: its metadata.json names the demo's
sample_set, which the copy must not join unless the user asks (issue 19)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .test_upload import bucket, env_for, run_cli  # noqa: F401 - `bucket` is a fixture

DEMO = Path(__file__).resolve().parents[2] / "samples/accelsim-traces/tinyformer-step-sm70"


def uploaded_metadata(s3, bucket_name: str, trace_id: str) -> dict:
    key = f"accelsim-traces/{trace_id}/metadata.json"
    return json.loads(s3.client().get_object(Bucket=bucket_name, Key=key)["Body"].read())


@pytest.mark.slow
def test_a_copied_demo_folder_drops_its_sample_set_unless_asked(rclone_s3, bucket, tmp_path):  # noqa: F811
    copy = tmp_path / "my-trace"
    shutil.copytree(DEMO, copy)
    assert json.loads((copy / "metadata.json").read_text())["sample_set"] == "tinyformer-step"
    env = env_for(rclone_s3, bucket, tmp_path)

    dropped = run_cli(str(copy), "--trace-id", "copied-demo", env=env)
    assert dropped.returncode == 0, dropped.stderr
    assert "sample_set: dropped 'tinyformer-step'" in dropped.stderr
    meta = uploaded_metadata(rclone_s3, bucket, "copied-demo")
    assert "sample_set" not in meta and meta["model"].startswith("tinyformer")  # the rest stays

    asked = run_cli(str(copy), "--trace-id", "joined-demo", "--sample-set", "tinyformer-step", env=env)
    assert asked.returncode == 0, asked.stderr
    assert "sample_set:" not in asked.stderr
    assert uploaded_metadata(rclone_s3, bucket, "joined-demo")["sample_set"] == "tinyformer-step"
