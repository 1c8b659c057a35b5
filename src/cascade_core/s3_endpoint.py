"""Where the trace bucket is and how to talk to it: `S3Info`, the boto3 client every part uses,
and the credentials file the embedded server writes (so `cascade upload` on the same machine
finds it without any configuration)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

CREDENTIALS_FILE = "s3-credentials.json"


@dataclass(frozen=True)
class S3Info:
    endpoint: str | None  # None: the AWS default endpoint for the region
    bucket: str
    access_key: str | None = None  # None: boto3's usual chain (AWS_* variables, ~/.aws, ...)
    secret_key: str | None = None
    region: str = "us-east-1"

    def startup_lines(self) -> list[str]:
        """What `cascade serve` prints so a profiler can upload (the secret only when Cascade
        generated it; an external endpoint's credentials stay in the AWS_* environment)."""
        lines = [f"s3_endpoint: {self.endpoint or 'AWS S3'}", f"s3_bucket: {self.bucket}"]
        if self.access_key and self.secret_key:
            lines += [f"s3_access_key: {self.access_key}", f"s3_secret_key: {self.secret_key}"]
        return lines

    def __repr__(self) -> str:  # never put the secret in a log line
        return f"S3Info(endpoint={self.endpoint!r}, bucket={self.bucket!r}, access_key={self.access_key!r})"


def make_client(info: S3Info) -> Any:
    """A boto3 S3 client with path-style addressing and SigV4 (what rclone, MinIO and AWS all
    accept; rclone rejects presigned URLs of the older signature).

    Checksums only where the API requires them: since boto3 1.36 every PUT carries a CRC32
    trailer and every GET validates the checksum the server returns, and `rclone serve s3`
    returns one that does not match for objects over 8 MiB stored in one PUT, so those could
    never be downloaded (the 64 MB multipart threshold sends every smaller file that way)."""
    import boto3
    from botocore.config import Config

    config = Config(
        signature_version="s3v4",
        s3={"addressing_style": "path"},
        retries={"max_attempts": 3, "mode": "standard"},
        connect_timeout=5,
        read_timeout=60,
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
    )
    return boto3.session.Session().client(
        "s3",
        endpoint_url=info.endpoint,
        aws_access_key_id=info.access_key,
        aws_secret_access_key=info.secret_key,
        region_name=info.region,
        config=config,
    )


def credentials_path(data_dir: Path) -> Path:
    return data_dir / CREDENTIALS_FILE


def write_credentials_file(data_dir: Path, info: S3Info) -> Path:
    """Write the embedded endpoint's details, readable by the owner only (mode 0600). An
    unchanged file is left alone: a restart on a full disk has nothing to write."""
    path = credentials_path(data_dir)
    if read_credentials_file(data_dir) == info:
        return path
    data_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(asdict(info), f, indent=2)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a full disk leaves no half-written file behind
        raise
    return path


def read_credentials_file(data_dir: Path) -> S3Info | None:
    path = credentials_path(data_dir)
    try:
        data = json.loads(path.read_text())
        return S3Info(
            **{k: data.get(k) for k in ("endpoint", "bucket", "access_key", "secret_key")},
            region=data.get("region") or "us-east-1",
        )
    except (OSError, ValueError, TypeError):
        return None


def _region() -> str:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


class S3Settings(Protocol):
    """What `resolve_s3_info` reads of the settings: the server's, or `cascade upload`'s own."""

    @property
    def s3_endpoint(self) -> str | None: ...
    @property
    def s3_bucket(self) -> str: ...
    @property
    def data_dir(self) -> Path: ...


def resolve_s3_info(settings: S3Settings) -> S3Info | None:
    """The bucket to use: `CASCADE_S3_ENDPOINT` (+ AWS_* credentials) when set, else the embedded
    endpoint recorded in the data dir; None when there is neither."""
    if settings.s3_endpoint:
        return S3Info(
            endpoint=settings.s3_endpoint,
            bucket=settings.s3_bucket,
            # boto3 reads AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN itself.
            region=_region(),
        )
    return read_credentials_file(settings.data_dir)
