"""Upload a local trace directory to the bucket as `accelsim-traces/<trace_id>/...`, with a
`metadata.json` listing every file, written last (the server treats the upload as complete once
metadata.json is there and every file it lists has arrived at its size). Used by `cascade upload`
and by the demo data `cascade serve` seeds. Blocking (boto3): call it from a thread."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cascade_core.bounded_read import (
    DECOMPRESS_ERRORS,
    MAX_LINE_BYTES,
    TooLargeError,
    bounded_text_lines,
    open_bounded,
    read_bounded,
)
from cascade_core.trace_layout import METADATA_NAME, TRACES_PREFIX
from cascade_core.trace_limits import METADATA_MAX_BYTES

MULTIPART_THRESHOLD = 64 * 1024 * 1024
MULTIPART_CHUNK = 16 * 1024 * 1024

# Fields of metadata.json (see docs/trace-a-workload.md); "files" and "status" are filled in here.
METADATA_FIELDS = (
    "model",
    "layers",
    "gpu",
    "trace_gpu_arch",
    "suggested_sim_config",
    "real_gpu_config",
    "sample_sim_configs",
    "sample_set",
)


@dataclass(frozen=True)
class LocalFile:
    path: Path
    rel: str  # path inside the trace, e.g. "traces/kernel-1.trace"
    size: int


def _looks_like_tracer_output(directory: Path) -> bool:
    """True for the tracer's own `traces/` folder (kernelslist, kernel-N.trace*, stats*)."""
    return any(
        p.is_file() and (p.name.startswith("kernelslist") or p.name.startswith("kernel-"))
        for p in directory.iterdir()
    )


def collect_files(directory: Path) -> list[LocalFile]:
    """Every file to upload with its path inside the trace. Given the tracer's `traces/` folder
    itself, its files go under `traces/` so that `traces/kernelslist[.g]` is where the server
    looks; given a folder holding `traces/`, the layout is kept. A top-level metadata.json is not
    included: its fields are merged into the one written last."""
    prefix = "" if (directory / "traces").is_dir() or not _looks_like_tracer_output(directory) else "traces/"
    files = []
    for path in sorted(directory.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(directory).as_posix()
        if rel == METADATA_NAME:
            continue
        files.append(LocalFile(path, prefix + rel, path.stat().st_size))
    return files


_BINARY_VERSION = re.compile(r"^-binary version = (\d+)\s*$")
_KERNEL_TRACE = re.compile(r"kernel-[^/]*\.trace(g)?(\.xz|\.gz)?$")


def arch_from_trace_headers(files: list[LocalFile], max_header_lines: int = 64) -> str | None:
    """The traced GPU's arch from the first kernel trace's `-binary version = N` header line
    (what selects Accel-Sim's opcode map): 75 -> sm_75. None when no header says."""
    for f in files:
        if not _KERNEL_TRACE.search(f.rel):
            continue
        try:  # bounded: a header line of a GiB is not read whole
            with open_bounded(f.path, max_header_lines * MAX_LINE_BYTES, f.rel) as raw:
                for _, line in zip(range(max_header_lines), bounded_text_lines(raw, f.rel, errors="replace")):
                    if match := _BINARY_VERSION.match(line):
                        return f"sm_{match.group(1)}"
        except (TooLargeError, *DECOMPRESS_ERRORS):
            continue
    return None


def object_key(trace_id: str, rel: str) -> str:
    return f"{TRACES_PREFIX}{trace_id}/{rel}"


def build_metadata(trace_id: str, files: list[LocalFile], fields: dict[str, Any]) -> dict[str, Any]:
    """metadata.json: the given descriptive fields (None left out), status ok, and every file."""
    meta: dict[str, Any] = {"status": "ok"}
    meta.update({k: v for k, v in fields.items() if k in METADATA_FIELDS and v is not None})
    meta["files"] = [{"key": object_key(trace_id, f.rel), "bytes": f.size} for f in files]
    return meta


def transfer_config() -> Any:
    from boto3.s3.transfer import TransferConfig

    return TransferConfig(
        multipart_threshold=MULTIPART_THRESHOLD, multipart_chunksize=MULTIPART_CHUNK, max_concurrency=4
    )


def upload_trace(
    client: Any,
    bucket: str,
    trace_id: str,
    files: list[LocalFile],
    metadata: dict[str, Any],
    progress: Callable[[int], None] | None = None,
) -> None:
    """Upload every file (multipart above 64 MB), then metadata.json."""
    config = transfer_config()
    for f in files:
        client.upload_file(str(f.path), bucket, object_key(trace_id, f.rel), Config=config, Callback=progress)
    body = (json.dumps(metadata, indent=2) + "\n").encode()
    client.put_object(
        Bucket=bucket, Key=object_key(trace_id, METADATA_NAME), Body=body, ContentType="application/json"
    )
    if progress:
        progress(len(body))


def read_metadata_fields(directory: Path) -> dict[str, Any]:
    """The descriptive fields of a metadata.json already in the directory, if any. One that is
    there but is not a JSON object raises ValueError: uploading without the model, arch and
    timing it was meant to give would register a different trace than the user asked for."""
    path = directory / METADATA_NAME
    try:
        text = read_bounded(path, METADATA_MAX_BYTES, str(path)).decode()
    except FileNotFoundError:
        return {}
    except TooLargeError as exc:
        raise ValueError(f"{exc} (the server refuses a larger one)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read it ({exc})") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}): fix it or remove it") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a JSON object: fix it or remove it")
    return {k: v for k, v in data.items() if k in METADATA_FIELDS}


def sample_set_choice(fields: dict[str, Any], asked: str | None) -> str | None:
    """Set `fields["sample_set"]` to what the user asked for only: a folder copied from a demo
    trace keeps the demo's sample_set in its metadata.json, and joining that set silently would
    put the copy beside the demo traces in their comparison. Returns a note when one was dropped."""
    found = fields.pop("sample_set", None)
    if asked:
        fields["sample_set"] = asked
        return None
    if found:
        return (
            f"sample_set: dropped {found!r} from the folder's metadata.json "
            f"(--sample-set {found} to join that set)"
        )
    return None
