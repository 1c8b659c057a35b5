"""`cascade upload DIR --trace-id ID`: send a tracer output directory (raw `kernel-N.trace` files
or post-processed `.traceg`) to the trace bucket, with a `metadata.json` listing every file,
written last. The server registers, mirrors and processes it; this prints the id to watch.

The endpoint comes from CASCADE_S3_ENDPOINT / CASCADE_S3_BUCKET and the usual AWS_* credentials,
or else from the embedded endpoint `cascade serve` recorded in the data dir (CASCADE_DATA_DIR).

A client-side command: it uses the rules of the core (cascade_core) only (the upload rules, the
trace layout, the bucket client), and boto3, which it alone of this package imports.
"""

from __future__ import annotations

import argparse
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from cascade_core.cli_usage import OneLineErrorParser
from cascade_core.s3_endpoint import S3Info, make_client, resolve_s3_info
from cascade_core.setting_errors import data_dir_problem, settings_problem_line
from cascade_core.trace_layout import TRACES_PREFIX
from cascade_core.trace_upload import (
    LocalFile,
    arch_from_trace_headers,
    build_metadata,
    collect_files,
    read_metadata_fields,
    sample_set_choice,
    upload_trace,
)
from cascade_core.upload_rules import layout_problem, trace_id_problem

from ..connection.local_server import default_data_dir
from .timeline_command import DEFAULT_MIN_COVERAGE, coverage_pct

_ARCH = re.compile(r"sm_\d{2,3}[a-z]?\Z")


class UploadSettings(BaseSettings):
    """The settings `cascade upload` reads, from the variables `cascade serve` reads them from."""

    model_config = SettingsConfigDict(env_prefix="CASCADE_", extra="ignore")

    data_dir: Path = Field(default_factory=default_data_dir)
    s3_endpoint: str | None = None
    s3_bucket: str = "cascade"

    @field_validator("data_dir")
    @classmethod
    def _data_dir_can_be_a_directory(cls, path: Path) -> Path:
        if problem := data_dir_problem(path):
            raise ValueError(problem)
        return path


class UploadError(Exception):
    """A one-line reason, with the exit code to return."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = OneLineErrorParser(
        prog="cascade upload",
        description="Upload a trace directory to the S3 endpoint the Cascade server scans "
        "(CASCADE_S3_ENDPOINT, or the embedded one `cascade serve` started on this machine).",
    )
    parser.add_argument(
        "directory",
        type=Path,
        help="the tracer's output directory (its traces/ folder or the folder holding it)",
    )
    parser.add_argument("--trace-id", required=True, help="the trace's id (letters, digits, '.', '_', '-')")
    parser.add_argument("--model", help="the workload's model, e.g. facebook/opt-125m")
    parser.add_argument("--gpu", help="the GPU it was traced on, e.g. 'NVIDIA H100 80GB HBM3'")
    parser.add_argument("--arch", help="the traced GPU's arch, e.g. sm_90 (the default on the server)")
    parser.add_argument("--suggested-config", help="the Accel-Sim config to preselect, e.g. SM90_H100")
    parser.add_argument(
        "--sample-set",
        help="join the traces compared side by side under this name "
        "(a sample_set in the folder's metadata.json is dropped without it)",
    )
    parser.add_argument(
        "--endpoint", help="S3 endpoint URL (default: CASCADE_S3_ENDPOINT or the embedded one)"
    )
    parser.add_argument("--bucket", help="bucket (default: CASCADE_S3_BUCKET, or 'cascade')")
    parser.add_argument(
        "--profile",
        type=Path,
        help="a PyTorch profiler (Kineto) trace of the same workload: "
        "`cascade timeline import` runs on it first, so the trace gets real timing and steps",
    )
    parser.add_argument(
        "--step-pattern",
        metavar="REGEX",
        help="with --profile: the CPU annotations that mark a step (default: ProfilerStep#N)",
    )
    parser.add_argument(
        "--min-coverage",
        type=coverage_pct,
        default=DEFAULT_MIN_COVERAGE,
        metavar="PCT",
        help="with --profile: refuse it when fewer than PCT%% of its steps' kernel launches map "
        f"to the trace's kernels (default: {DEFAULT_MIN_COVERAGE:g})",
    )
    return parser.parse_args(argv)


class ProgressBar:
    """A plain progress bar on stderr; boto3 calls `__call__` from its transfer threads."""

    def __init__(self, total: int, stream: Any = sys.stderr) -> None:
        self.total = max(total, 1)
        self.done = 0
        self.stream = stream
        self.lock = threading.Lock()
        self.last_draw = 0.0
        self.interactive = bool(getattr(stream, "isatty", lambda: False)())

    def __call__(self, n: int) -> None:
        with self.lock:
            self.done += n
            now = time.monotonic()
            if now - self.last_draw >= (0.1 if self.interactive else 2.0):
                self.last_draw = now
                self.draw()

    def draw(self, end: str = "") -> None:
        fraction = min(self.done / self.total, 1.0)
        filled = int(fraction * 30)
        line = f"[{'#' * filled}{'.' * (30 - filled)}] {fraction * 100:5.1f}%  {_mb(self.done)} / {_mb(self.total)}"
        self.stream.write(("\r" + line + end) if self.interactive else (line + "\n"))
        self.stream.flush()

    def finish(self) -> None:
        with self.lock:
            self.done = self.total
            self.draw(end="\n")


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def _s3_info(args: argparse.Namespace) -> S3Info:
    try:
        settings = UploadSettings()
    except ValidationError as exc:
        raise UploadError(f"invalid settings: {settings_problem_line(UploadSettings, exc, {})}", 2) from None
    overrides = {k: v for k, v in {"s3_endpoint": args.endpoint, "s3_bucket": args.bucket}.items() if v}
    if overrides:
        settings = settings.model_copy(update=overrides)
    info = resolve_s3_info(settings)
    if info is None:
        raise UploadError(
            "no S3 endpoint: set CASCADE_S3_ENDPOINT (with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), "
            f"or run `cascade serve` on this machine (no embedded endpoint recorded in {settings.data_dir})",
            2,
        )
    if args.bucket:
        info = S3Info(info.endpoint, args.bucket, info.access_key, info.secret_key, info.region)
    return info


def _check_files(directory: Path) -> list[LocalFile]:
    if not directory.exists():
        raise UploadError(f"{directory}: no such directory", 2)
    if not directory.is_dir():
        raise UploadError(f"{directory}: not a directory", 2)
    files = collect_files(directory)
    if not files:
        raise UploadError(f"{directory}: no files to upload", 2)
    # The server's own rule: it would fail such a trace after the whole upload.
    if problem := layout_problem(f.rel for f in files):
        raise UploadError(f"{directory}: the server would refuse this trace: {problem}", 2)
    return files


# What an S3 endpoint answers when it has no room: MinIO's code, the HTTP status for it, quotas.
_NO_SPACE_CODES = {
    "XMinioStorageFull",
    "InsufficientStorage",
    "507",
    "QuotaExceeded",
    "XMinioAdminBucketQuotaExceeded",
}


def _describe_client_error(exc: Exception, info: S3Info, *, storing: bool = False) -> str:
    """One line for any error boto3 raises; `storing`: while the trace's objects went up."""
    from boto3.exceptions import S3UploadFailedError
    from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError

    where = info.endpoint or "AWS S3"
    if isinstance(exc, S3UploadFailedError) and isinstance(exc.__context__, ClientError):
        exc = exc.__context__  # boto3 wraps the endpoint's answer in a line naming a local path
    if isinstance(exc, EndpointConnectionError):
        return f"cannot reach the S3 endpoint {where}"
    if isinstance(exc, NoCredentialsError):
        return "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code", "?"))
        said = f"{code}: {error['Message']}" if error.get("Message") else code
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code in ("404", "NoSuchBucket"):
            return f"bucket {info.bucket!r} does not exist at {where}"
        if code in ("403", "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied"):
            return f"{where} refused the credentials ({code})"
        refused = f"bucket {info.bucket!r} at {where} refused the trace's files"
        if code in _NO_SPACE_CODES or status == 507:
            return f"{refused}: no space left on the S3 endpoint ({said})"
        if storing and (status or 500) >= 500:
            # rclone answers a full disk with a bare 500 InternalError: the reason is in its log.
            return (
                f"{refused}: the endpoint failed to store them ({said}), e.g. its disk is full; "
                "its log says why"
            )
        return f"{refused}: {said}" if storing else f"S3 error from {where}: {said}"
    detail = str(exc).splitlines()[0] if str(exc) else ""
    return f"S3 error from {where}: {type(exc).__name__}" + (f": {detail}" if detail else "")


def _import_profile(args: argparse.Namespace) -> None:
    from cascade_core.timeline.kineto import DEFAULT_STEP_PATTERN

    from .timeline_command import ImportFailed, run_import

    try:
        result = run_import(
            args.profile, args.directory, args.step_pattern or DEFAULT_STEP_PATTERN, args.min_coverage
        )
    except ImportFailed as exc:
        raise UploadError(f"--profile: {exc}") from None
    for line in result.summary_lines():
        print(f"profile: {line}", file=sys.stderr)


def upload(args: argparse.Namespace) -> str:
    if problem := trace_id_problem(args.trace_id):
        raise UploadError(problem, 2)
    if args.arch and not _ARCH.match(args.arch):
        raise UploadError(f"--arch {args.arch!r} is not an arch like sm_90", 2)
    files = _check_files(args.directory)
    if args.profile is not None:
        _import_profile(args)  # after the layout check: nothing is written into a folder it refuses
        files = _check_files(args.directory)  # now with the three timing files
    try:
        fields = read_metadata_fields(args.directory)
    except ValueError as exc:
        raise UploadError(str(exc), 2) from None
    info = _s3_info(args)

    from boto3.exceptions import Boto3Error
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        client = make_client(info)
    except ValueError as exc:  # botocore refuses a malformed endpoint URL
        raise UploadError(
            f"invalid S3 endpoint {info.endpoint!r} (CASCADE_S3_ENDPOINT / --endpoint): {exc}", 2
        ) from None
    try:
        client.head_bucket(Bucket=info.bucket)
        existing = client.list_objects_v2(
            Bucket=info.bucket, Prefix=f"{TRACES_PREFIX}{args.trace_id}/", MaxKeys=1
        )
    except (BotoCoreError, ClientError, Boto3Error) as exc:
        raise UploadError(_describe_client_error(exc, info)) from None
    if existing.get("KeyCount", 0):
        raise UploadError(
            f"trace {args.trace_id!r} already exists in bucket {info.bucket!r}: choose another --trace-id"
        )

    fields.update(
        {
            k: v
            for k, v in {
                "model": args.model,
                "gpu": args.gpu,
                "trace_gpu_arch": args.arch,
                "suggested_sim_config": args.suggested_config,
            }.items()
            if v is not None
        }
    )
    if note := sample_set_choice(fields, args.sample_set):
        print(note, file=sys.stderr)
    if "trace_gpu_arch" not in fields:
        # Without --arch the server would assume sm_90; the trace's own headers know better.
        detected = arch_from_trace_headers(files)
        if detected:
            fields["trace_gpu_arch"] = detected
            print(f"arch: {detected} (from the traces' -binary version; --arch to override)", file=sys.stderr)
        else:
            print(
                "arch: not given and not found in the traces; the server assumes sm_90 (--arch to set it)",
                file=sys.stderr,
            )
    metadata = build_metadata(args.trace_id, files, fields)
    total = sum(f.size for f in files)
    print(
        f"uploading {len(files)} files ({_mb(total)}) to {info.endpoint or 's3'}/{info.bucket}/"
        f"{TRACES_PREFIX}{args.trace_id}/",
        file=sys.stderr,
    )
    bar = ProgressBar(total)
    try:
        upload_trace(client, info.bucket, args.trace_id, files, metadata, progress=bar)
    except (BotoCoreError, ClientError, Boto3Error) as exc:
        raise UploadError(_describe_client_error(exc, info, storing=True)) from None
    except OSError as exc:  # a local file went away or became unreadable mid-upload
        raise UploadError(str(exc)) from None
    bar.finish()
    return args.trace_id


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    try:
        trace_id = upload(args)
    except UploadError as exc:
        print(f"cascade upload: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print(
            "cascade upload: interrupted; the trace stays incomplete (metadata.json not written)",
            file=sys.stderr,
        )
        return 130
    print(trace_id)
    print(
        f"uploaded; the server registers it within seconds: watch it with `cascade tui` "
        f"or GET /api/traces/{trace_id}",
        file=sys.stderr,
    )
    return 0
