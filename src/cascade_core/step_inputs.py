"""Reading the step-timeline inputs of a trace directory (found by `shared.trace_layout`) and the JSON files `cascade simulate`
and `cascade compare` take (shared by those commands, the worker, and the server, which builds a
sharded replica's step timeline from all its shards' kernels)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from cascade_core.bounded_read import TIMING_FILE_MAX_BYTES, TooLargeError, read_bounded
from cascade_core.timeline.formats import CorrectedTimeline, KernelMapping
from cascade_core.trace_layout import CORRECTED_TIMELINE_NAME, KERNEL_MAPPING_NAME, locate


class TimelineFileError(Exception):
    """A missing or unreadable file; the message is one line."""


def read_json(path: Path) -> Any:
    try:
        return json.loads(read_bounded(path, TIMING_FILE_MAX_BYTES, str(path), decompress=False))
    except TooLargeError as exc:
        raise TimelineFileError(str(exc)) from None
    except OSError as exc:
        raise TimelineFileError(f"{path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise TimelineFileError(f"{path}: not JSON ({exc})") from None


def read_model(path: Path, model: type[Any]) -> Any:
    try:
        return model.model_validate(read_json(path))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise TimelineFileError(f"{path}: {where or 'document'}: {first['msg']}") from None


def read_step_inputs(trace_dir: Path) -> tuple[CorrectedTimeline, KernelMapping]:
    """The trace's measured steps and kernel mapping (`cascade timeline import` writes them)."""
    found = {}
    for name in (CORRECTED_TIMELINE_NAME, KERNEL_MAPPING_NAME):
        path = locate(trace_dir, name)
        if path is None:
            raise TimelineFileError(
                f"{trace_dir}: no {name} (run `cascade timeline import PROFILE {trace_dir}`)"
            )
        found[name] = path
    return (
        read_model(found[CORRECTED_TIMELINE_NAME], CorrectedTimeline),
        read_model(found[KERNEL_MAPPING_NAME], KernelMapping),
    )
