"""`cascade upload` against a real `rclone serve s3`: round trip, metadata.json, errors."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cascade_core import trace_upload as uploader
from cascade_tui.scripting import upload_command as upload_cmd
from tests.helpers import free_port

from .test_trace_helpers import raw_dir_for_upload

_buckets = itertools.count()


@pytest.fixture
def bucket(rclone_s3):
    name = f"upload-{next(_buckets):04d}"
    rclone_s3.client().create_bucket(Bucket=name)
    return name


def env_for(s3, bucket: str, tmp_path: Path) -> dict[str, str]:
    return {
        "CASCADE_S3_ENDPOINT": s3.endpoint,
        "CASCADE_S3_BUCKET": bucket,
        "AWS_ACCESS_KEY_ID": s3.access_key,
        "AWS_SECRET_ACCESS_KEY": s3.secret_key,
        "CASCADE_DATA_DIR": str(tmp_path / "data"),
    }


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cascade_tui.cli", "upload", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_upload_round_trips_a_directory(rclone_s3, bucket, tmp_path):
    traces = raw_dir_for_upload(tmp_path)
    result = run_cli(
        str(traces),
        "--trace-id",
        "round-trip",
        "--model",
        "tinyformer",
        "--gpu",
        "V100",
        "--arch",
        "sm_70",
        "--suggested-config",
        "SM7_QV100",
        env=env_for(rclone_s3, bucket, tmp_path),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "round-trip"
    assert "100.0%" in result.stderr

    client = rclone_s3.client()
    listing = client.list_objects_v2(Bucket=bucket, Prefix="accelsim-traces/round-trip/")
    keys = sorted(o["Key"] for o in listing["Contents"])
    local = sorted(p for p in traces.iterdir())
    # Given the traces/ folder itself, its files land under traces/ (where the server looks).
    assert keys == sorted(
        [f"accelsim-traces/round-trip/traces/{p.name}" for p in local]
        + ["accelsim-traces/round-trip/metadata.json"]
    )
    for path in local:
        body = client.get_object(Bucket=bucket, Key=f"accelsim-traces/round-trip/traces/{path.name}")[
            "Body"
        ].read()
        assert body == path.read_bytes()
    meta = json.loads(
        client.get_object(Bucket=bucket, Key="accelsim-traces/round-trip/metadata.json")["Body"].read()
    )
    assert meta["status"] == "ok"
    assert (meta["model"], meta["gpu"], meta["trace_gpu_arch"], meta["suggested_sim_config"]) == (
        "tinyformer",
        "V100",
        "sm_70",
        "SM7_QV100",
    )
    assert {f["key"]: f["bytes"] for f in meta["files"]} == {
        f"accelsim-traces/round-trip/traces/{p.name}": p.stat().st_size for p in local
    }

    again = run_cli(str(traces), "--trace-id", "round-trip", env=env_for(rclone_s3, bucket, tmp_path))
    assert again.returncode == 1
    assert again.stderr.strip() == (
        f"cascade upload: trace 'round-trip' already exists in bucket '{bucket}': choose another --trace-id"
    )


def test_large_files_go_up_in_parts(rclone_s3, bucket, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(uploader, "MULTIPART_THRESHOLD", 5 * 1024 * 1024)
    monkeypatch.setattr(uploader, "MULTIPART_CHUNK", 5 * 1024 * 1024)
    for key, value in env_for(rclone_s3, bucket, tmp_path).items():
        monkeypatch.setenv(key, value)
    run = tmp_path / "big"
    (run / "traces").mkdir(parents=True)
    big = os.urandom(12 * 1024 * 1024 + 17)
    (run / "traces" / "kernel-1.traceg").write_bytes(big)
    (run / "traces" / "kernelslist.g").write_text("kernel-1.traceg\n")
    assert upload_cmd.main([str(run), "--trace-id", "big"]) == 0
    body = (
        rclone_s3.client()
        .get_object(Bucket=bucket, Key="accelsim-traces/big/traces/kernel-1.traceg")["Body"]
        .read()
    )
    assert body == big
    assert capsys.readouterr().out.strip() == "big"


@pytest.mark.parametrize(
    "make_dir, code, message",
    [
        (lambda p: p / "nope", 2, "no such directory"),
        (lambda p: (p / "empty").mkdir() or p / "empty", 2, "no files to upload"),
    ],
)
def test_missing_or_empty_directory_is_a_one_line_error(rclone_s3, bucket, tmp_path, make_dir, code, message):
    directory = make_dir(tmp_path)
    result = run_cli(str(directory), "--trace-id", "t1", env=env_for(rclone_s3, bucket, tmp_path))
    assert result.returncode == code
    assert result.stderr.strip() == f"cascade upload: {directory}: {message}"


def test_unreachable_endpoint_is_a_one_line_error(rclone_s3, bucket, tmp_path):
    traces = raw_dir_for_upload(tmp_path)
    env = {**env_for(rclone_s3, bucket, tmp_path), "CASCADE_S3_ENDPOINT": f"http://127.0.0.1:{free_port()}"}
    result = run_cli(str(traces), "--trace-id", "t2", env=env)
    assert result.returncode == 1
    assert (
        result.stderr.strip() == f"cascade upload: cannot reach the S3 endpoint {env['CASCADE_S3_ENDPOINT']}"
    )


def test_wrong_credentials_and_bad_trace_id_are_one_line_errors(rclone_s3, bucket, tmp_path):
    traces = raw_dir_for_upload(tmp_path)
    env = {**env_for(rclone_s3, bucket, tmp_path), "AWS_SECRET_ACCESS_KEY": "wrong-secret-0000"}
    result = run_cli(str(traces), "--trace-id", "t3", env=env)
    assert result.returncode == 1
    assert result.stderr.strip().startswith(f"cascade upload: {rclone_s3.endpoint} refused the credentials")
    bad = run_cli(str(traces), "--trace-id", "no spaces", env=env_for(rclone_s3, bucket, tmp_path))
    assert bad.returncode == 2 and "is not valid" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_no_endpoint_configured_is_a_one_line_error(tmp_path):
    traces = raw_dir_for_upload(tmp_path)
    env = {"CASCADE_DATA_DIR": str(tmp_path / "empty-data"), "CASCADE_S3_ENDPOINT": ""}
    result = run_cli(str(traces), "--trace-id", "t4", env=env)
    assert result.returncode == 2
    assert result.stderr.strip().startswith("cascade upload: no S3 endpoint: set CASCADE_S3_ENDPOINT")


@pytest.mark.slow
def test_arch_comes_from_the_trace_headers_when_not_given(rclone_s3, bucket, tmp_path):
    import shutil

    traces = tmp_path / "sm75" / "traces"
    shutil.copytree(
        Path(__file__).resolve().parents[2] / "samples/accelsim-traces/tinyformer-step-sm75/traces", traces
    )
    result = run_cli(str(traces), "--trace-id", "no-arch-given", env=env_for(rclone_s3, bucket, tmp_path))
    assert result.returncode == 0, result.stderr
    assert "arch: sm_75 (from the traces' -binary version" in result.stderr
    key = "accelsim-traces/no-arch-given/metadata.json"
    meta = json.loads(rclone_s3.client().get_object(Bucket=bucket, Key=key)["Body"].read())
    assert meta["trace_gpu_arch"] == "sm_75"
    given = run_cli(
        str(traces), "--trace-id", "arch-given", "--arch", "sm_70", env=env_for(rclone_s3, bucket, tmp_path)
    )
    assert given.returncode == 0 and "arch:" not in given.stderr
