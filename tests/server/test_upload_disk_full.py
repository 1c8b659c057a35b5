"""`cascade upload` to an S3 endpoint that cannot store the objects: one line saying the bucket
refused them and why, exit 1, never boto3's traceback. The full disk is a real, small tmpfs
mounted as the bucket's directory of the session's real `rclone serve s3` (needs root and mount;
skipped with the reason otherwise)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from botocore.exceptions import ClientError

from cascade_core.s3_endpoint import S3Info
from cascade_tui.scripting.upload_command import _describe_client_error
from tests.helpers import small_tmpfs


@pytest.fixture
def full_bucket(rclone_s3):
    """A bucket whose directory is a 64 KiB tmpfs: room for nothing the size of a trace."""
    name = "full-disk"
    directory = rclone_s3.root / name
    # Through the S3 API, not mkdir: rclone caches its listing of buckets.
    rclone_s3.client().create_bucket(Bucket=name)
    with small_tmpfs(directory, "size=64k"):
        yield name


def test_upload_to_a_full_endpoint_is_one_line_saying_the_bucket_refused_it(rclone_s3, full_bucket, tmp_path):
    traces = tmp_path / "trace" / "traces"
    traces.mkdir(parents=True)
    (traces / "kernelslist.g").write_text("kernel-1.traceg\n")
    (traces / "kernel-1.traceg").write_bytes(b"-kernel name = k\n" + os.urandom(300_000))
    env = {
        **os.environ,
        "CASCADE_S3_ENDPOINT": rclone_s3.endpoint,
        "CASCADE_S3_BUCKET": full_bucket,
        "AWS_ACCESS_KEY_ID": rclone_s3.access_key,
        "AWS_SECRET_ACCESS_KEY": rclone_s3.secret_key,
        "CASCADE_DATA_DIR": str(tmp_path / "data"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "cascade_tui.cli", "upload", str(tmp_path / "trace"), "--trace-id", "too-big"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (done.returncode, done.stdout) == (1, ""), done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.splitlines()[-1]
    assert last == (
        f"cascade upload: bucket '{full_bucket}' at {rclone_s3.endpoint} refused the trace's files: "
        "the endpoint failed to store them (InternalError: Internal Error), e.g. its disk is full; "
        "its log says why"
    )


def _client_error(code: str, message: str, status: int) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": status}},
        "PutObject",
    )


INFO = S3Info("http://s3.example:9000", "traces")


@pytest.mark.parametrize(
    "error, line",
    [
        (
            _client_error(
                "XMinioStorageFull", "Storage backend has reached its minimum free drive threshold.", 507
            ),
            "bucket 'traces' at http://s3.example:9000 refused the trace's files: no space left on the S3 endpoint "
            "(XMinioStorageFull: Storage backend has reached its minimum free drive threshold.)",
        ),
        (
            _client_error("QuotaExceeded", "Bucket quota exceeded", 403),
            "bucket 'traces' at http://s3.example:9000 refused the trace's files: no space left on the S3 endpoint "
            "(QuotaExceeded: Bucket quota exceeded)",
        ),
        (
            _client_error("EntityTooLarge", "Your proposed upload exceeds the maximum allowed size", 400),
            "bucket 'traces' at http://s3.example:9000 refused the trace's files: "
            "EntityTooLarge: Your proposed upload exceeds the maximum allowed size",
        ),
        (
            _client_error("AccessDenied", "Access Denied.", 403),
            "http://s3.example:9000 refused the credentials (AccessDenied)",
        ),
    ],
)
def test_every_refusal_while_storing_names_the_bucket_and_the_reason(error, line):
    assert _describe_client_error(error, INFO, storing=True) == line


def test_boto3_wrapping_of_a_failed_upload_is_unwrapped_to_the_endpoint_answer():
    from boto3.exceptions import S3UploadFailedError

    try:
        try:
            raise _client_error("InsufficientStorage", "", 507)
        except ClientError as inner:
            raise S3UploadFailedError(f"Failed to upload /home/me/x to traces/x: {inner}")  # noqa: B904 - as boto3 does
    except S3UploadFailedError as exc:
        wrapped = exc
    assert _describe_client_error(wrapped, INFO, storing=True) == (
        "bucket 'traces' at http://s3.example:9000 refused the trace's files: no space left on the S3 endpoint "
        "(InsufficientStorage)"
    )
