"""How values are stored: ids, times, compressed blobs, and rows back into API models."""

from __future__ import annotations

import json
import pickle
import secrets
import zlib
from datetime import UTC, datetime
from typing import Any

import aiosqlite

from ..shared.models import KernelStat, SimMetrics, SimSummary


def new_id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(6)}"


def iso(dt: datetime) -> str:
    """ISO 8601 UTC with a `Z` and fixed microseconds, so stored times also sort as text."""
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def pack(obj: Any) -> bytes:
    return zlib.compress(json.dumps(obj, allow_nan=True, separators=(",", ":")).encode(), 1)


def unpack(blob: bytes | None) -> Any:
    return None if blob is None else json.loads(zlib.decompress(blob))


def pack_stats(stats: dict[str, float | str]) -> bytes:
    """A kernel's full stats map (1,000-3,000 keys), compressed. Pickled rather than JSON: the
    map is written on the ingest hot path, and pickle is several times cheaper both ways."""
    return zlib.compress(pickle.dumps(stats, protocol=5), 1)


def unpack_stats(blob: bytes) -> dict[str, float | str]:
    stats: dict[str, float | str] = pickle.loads(zlib.decompress(blob))
    return stats


def pack_lines(lines: list[str]) -> bytes:
    """A chunk as stored: every line ending in a newline (so the log download is a plain
    concatenation, and an empty chunk stays empty), compressed."""
    text = "\n".join(lines) + "\n" if lines else ""
    return zlib.compress(text.encode("utf-8", "surrogatepass"), 1)


def unpack_lines(blob: bytes) -> list[str]:
    return zlib.decompress(blob).decode("utf-8", "surrogatepass").split("\n")[:-1]


def pack_state(state: dict[str, Any]) -> bytes:
    """A parser's state, saved with every group of chunks: pickle of plain dicts, lists, strings
    and floats (several times cheaper than JSON on this hot path, and stable across versions)."""
    return pickle.dumps(state, protocol=5)


def unpack_state(blob: bytes | None) -> dict[str, Any] | None:
    return None if blob is None else pickle.loads(blob)


def sim_from_row(row: aiosqlite.Row) -> SimSummary:
    return SimSummary(
        id=row["id"],
        run_id=row["run_id"],
        gpu_config=row["gpu_config"],
        replica=row["replica"],
        state=row["state"],
        error=row["error"],
        launcher_ref=row["launcher_ref"],
        launcher_state=row["launcher_state"],
        created_at=row["created_at"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        last_heartbeat_at=row["last_heartbeat_at"],
        exit_code=row["exit_code"],
        kernels_done=row["kernels_done"],
        kernels_total=row["kernels_total"],
        current_kernel=row["current_kernel"],
        latest=SimMetrics.model_validate_json(row["latest"]),
        log_tail=json.loads(row["log_tail"]),
    )


def kernel_from_row(row: aiosqlite.Row, with_stats: bool) -> KernelStat:
    return KernelStat(
        sim_id=row["sim_id"],
        kernel_index=row["kernel_index"],
        kernel_name=row["kernel_name"],
        kernel_launch_uid=row["kernel_launch_uid"],
        gpu_sim_cycle=row["gpu_sim_cycle"],
        gpu_sim_insn=row["gpu_sim_insn"],
        gpu_ipc=row["gpu_ipc"],
        sim_time_ns=row["sim_time_ns"],
        stats=unpack_stats(row["stats"]) if with_stats else {},
    )
