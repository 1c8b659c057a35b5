"""Pure parsing of a trace's `metadata.json` (written by the profiler or `cascade upload`).

Every field is optional. Descriptive fields of the wrong type are dropped rather than failing the
trace; `files`, which decides when the upload is complete, must be well-formed.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cascade_core.bounded_read import TooLargeError, read_bounded
from cascade_core.trace_layout import METADATA_NAME, MetadataError, relative_key
from cascade_core.trace_limits import METADATA_MAX_BYTES, METADATA_MAX_FILES, clip_list, clip_text

DEFAULT_TRACE_GPU_ARCH = "sm_90"
FAILED_STATUS_ERROR = "profiler reported status 'failed' in metadata.json"


@dataclass(frozen=True)
class TraceMetadata:
    raw: dict[str, Any]
    status: str | None = None
    model: str | None = None
    layers: list[str] = field(default_factory=list)
    source_gpu: str | None = None
    trace_gpu_arch: str = DEFAULT_TRACE_GPU_ARCH
    suggested_sim_config: str | None = None
    real_gpu_config: str | None = None
    sample_sim_configs: list[str] = field(default_factory=list)
    sample_set: str | None = None
    # Path inside the trace (e.g. "traces/kernel-1.trace") -> size in bytes it must reach.
    files: dict[str, int] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    def trace_fields(self) -> dict[str, Any]:
        """The TraceSummary fields metadata.json decides, each clipped (`limits`): every
        `GET /api/traces` carries them for every trace; `metadata` keeps them whole."""
        return {
            "model": clip_text(self.model),
            "layers": clip_list(self.layers),
            "source_gpu": clip_text(self.source_gpu),
            "trace_gpu_arch": clip_text(self.trace_gpu_arch),
            "suggested_sim_config": clip_text(self.suggested_sim_config),
            "real_gpu_config": clip_text(self.real_gpu_config),
            "sample_sim_configs": clip_list(self.sample_sim_configs),
            "sample_set": clip_text(self.sample_set),
        }


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _str_list(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, str)]


def _files(value: Any, trace_id: str) -> dict[str, int]:
    if value is None:
        return {}
    if not isinstance(value, list):
        raise MetadataError('metadata.json \'files\' must be a list of {"key", "bytes"} objects')
    if len(value) > METADATA_MAX_FILES:  # each scan checks every listed file until all arrived
        raise MetadataError(f"metadata.json lists {len(value)} files, more than {METADATA_MAX_FILES}")
    files: dict[str, int] = {}
    for index, item in enumerate(value):
        key = item.get("key") if isinstance(item, dict) else None
        size = item.get("bytes") if isinstance(item, dict) else None
        if (
            not isinstance(key, str)
            or not key
            or isinstance(size, bool)
            or not isinstance(size, int)
            or size < 0
        ):
            raise MetadataError(
                f"metadata.json files[{index}] needs a string 'key' and a non-negative integer 'bytes'"
            )
        rel = relative_key(key, trace_id)
        if rel == METADATA_NAME:
            continue  # metadata.json cannot know its own final size
        files[rel] = size
    return files


def read_metadata_file(path: Path, trace_id: str) -> TraceMetadata:
    """Read and parse a mirrored metadata.json within METADATA_MAX_BYTES (blocking: the scanner
    runs it in a thread, so a big one never holds the event loop)."""
    try:
        raw = read_bounded(path, METADATA_MAX_BYTES, METADATA_NAME, decompress=False)
    except TooLargeError as exc:
        raise MetadataError(str(exc)) from None
    return parse_metadata(raw, trace_id)


def parse_metadata(raw: bytes, trace_id: str) -> TraceMetadata:
    """Parse metadata.json's bytes; raises `MetadataError` with a one-line reason."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise MetadataError("metadata.json is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise MetadataError(f"metadata.json is not valid JSON: {exc}") from None
    except ValueError:  # Python refuses to convert integers this long (a denial of service)
        raise MetadataError(
            f"metadata.json is not valid JSON: an integer of more than {sys.get_int_max_str_digits()} digits"
        ) from None
    except RecursionError:
        raise MetadataError("metadata.json is not valid JSON: nested too deeply") from None
    return metadata_from_dict(data, trace_id)


def metadata_from_dict(data: Any, trace_id: str) -> TraceMetadata:
    """Interpret parsed metadata.json (also used on restart, from the stored copy)."""
    if not isinstance(data, dict):
        raise MetadataError("metadata.json must hold a JSON object")
    status = data.get("status")
    return TraceMetadata(
        raw=data,
        status=status if isinstance(status, str) else None,
        model=_str_or_none(data.get("model")),
        layers=_str_list(data.get("layers")),
        source_gpu=_str_or_none(data.get("gpu")),
        trace_gpu_arch=_str_or_none(data.get("trace_gpu_arch")) or DEFAULT_TRACE_GPU_ARCH,
        suggested_sim_config=_str_or_none(data.get("suggested_sim_config")),
        real_gpu_config=_str_or_none(data.get("real_gpu_config")),
        sample_sim_configs=_str_list(data.get("sample_sim_configs")),
        sample_set=_str_or_none(data.get("sample_set")),
        files=_files(data.get("files"), trace_id),
    )
