"""How values are stored: ids, times, compressed blobs, and rows back into API models."""

from __future__ import annotations

import io
import json
import pickle
import secrets
import zlib
from datetime import UTC, datetime
from typing import Any

import aiosqlite
import zstandard

from cascade_core.log_notes import ranges_text
from cascade_core.models import KernelPower, KernelStat, SimMetrics, SimSummary
from cascade_core.sampling import SimSample

from .shard_columns import shard_from_row


def new_id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(6)}"


def iso(dt: datetime) -> str:
    """ISO 8601 UTC with a `Z` and fixed microseconds, so stored times also sort as text."""
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# Blobs are Zstandard frames at level 1: on ingest's hot path it compresses real logs 2-3 times
# faster than zlib's fastest level, and smaller (benchmarks/bench_ingest.py). Each frame carries a
# checksum of its content (zlib streams always did): a damaged blob is an error, never silently
# wrong text or stats. Databases written before hold zlib streams, read as ever: a blob says
# which it is by its first bytes.
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# No blob this server writes comes near this (a chunk is one request body, an open stats block
# is bounded by the parser); a damaged frame header claiming more is refused, not allocated.
MAX_BLOB_BYTES = 512 * 1024 * 1024
# What `decompress` raises for a damaged blob.
DECOMPRESS_ERRORS = (zstandard.ZstdError, zlib.error, ValueError)


def compress(data: bytes) -> bytes:
    # A compressor per call: one is not safe to share between threads (blobs are packed on the
    # event loop, in its executor threads and in the parse workers), and making one costs ~7 µs.
    return zstandard.ZstdCompressor(level=1, write_checksum=True).compress(data)


def decompress(blob: bytes) -> bytes:
    """A blob from `compress`, or a zlib stream from a database written before; a damaged blob
    (wrong checksum, bytes after the frame, a size past MAX_BLOB_BYTES) raises one of
    DECOMPRESS_ERRORS."""
    if blob[:4] != _ZSTD_MAGIC:
        return zlib.decompress(blob)
    size = zstandard.frame_content_size(blob)
    if not 0 <= size <= MAX_BLOB_BYTES:
        raise ValueError(f"stored blob claims {size} bytes: damaged")
    return zstandard.ZstdDecompressor().decompress(
        blob, max_output_size=MAX_BLOB_BYTES, allow_extra_data=False
    )


# A Zstandard frame's header is at most this long, and says how long its content is.
FRAME_HEADER_BYTES = 18


def content_size(head: bytes, blob_length: int) -> int:
    """How long a blob's content is, from its first FRAME_HEADER_BYTES: what its frame header
    says, or (a zlib stream from a database written before, a damaged header) its own length."""
    if head[:4] == _ZSTD_MAGIC:
        try:
            size = zstandard.frame_content_size(head)
        except zstandard.ZstdError:
            size = -1
        if 0 <= size <= MAX_BLOB_BYTES:
            return size
    return blob_length


def pack(obj: Any) -> bytes:
    return compress(json.dumps(obj, allow_nan=True, separators=(",", ":")).encode())


def unpack(blob: bytes | None) -> Any:
    return None if blob is None else json.loads(decompress(blob))


def pack_stats(stats: dict[str, float | str]) -> bytes:
    """A kernel's full stats map (1,000-3,000 keys), compressed. Pickled rather than JSON: the
    map is written on the ingest hot path, and pickle is several times cheaper both ways."""
    return compress(pickle.dumps(stats, protocol=5))


class _PlainUnpickler(pickle.Unpickler):
    """Stats and parser states are plain dicts, lists, strings and numbers: a pickle that names
    any class or function (a damaged or crafted blob) is refused, never imported or called."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"a stored blob names {module}.{name}: not plain data")


def _plain_loads(data: bytes) -> Any:
    return _PlainUnpickler(io.BytesIO(data)).load()


def unpack_stats(blob: bytes) -> dict[str, float | str]:
    stats = _plain_loads(decompress(blob))
    if not isinstance(stats, dict):
        raise ValueError(f"stored kernel stats are a {type(stats).__name__}, not a map")
    return stats


def chunk_text(lines: list[str]) -> str:
    """A chunk's text: every line ending in a newline (so the log download is a plain
    concatenation, and an empty chunk stays empty). The one form a chunk has in ingest, from the
    request to the parse workers, whose parser takes it as it is (one string pickles in no time;
    a list of 1,000 does not). Stored as its UTF-8 (lone surrogates kept), compressed."""
    return "\n".join(lines) + "\n" if lines else ""


def chunk_lines(text: str) -> list[str]:
    """The lines of a chunk's text (`chunk_text`)."""
    return text.split("\n")[:-1]


def encode_text(text: str) -> bytes:
    """A chunk's text as stored (before compression) and downloaded: UTF-8, lone surrogates
    (which a JSON body may hold) kept."""
    return text.encode("utf-8", "surrogatepass")


def decode_text(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")


def pack_text(text: str) -> bytes:
    """A chunk's text (`chunk_text`) as stored: compressed."""
    return compress(encode_text(text))


def unpack_text(blob: bytes) -> str:
    return decode_text(decompress(blob))


def pack_lines(lines: list[str]) -> bytes:
    """A chunk's lines as stored: their text, compressed."""
    return pack_text(chunk_text(lines))


def unpack_lines(blob: bytes) -> list[str]:
    return chunk_lines(unpack_text(blob))


def pack_state(state: dict[str, Any]) -> bytes:
    """A parser's state, saved with every group of chunks: pickle of plain dicts, lists, strings
    and floats (several times cheaper than JSON on this hot path, and stable across versions),
    compressed (an open stats block is tens of KB, written and read back with every group)."""
    return compress(pickle.dumps(state, protocol=5))


def unpack_state(blob: bytes | None) -> dict[str, Any] | None:
    if blob is None:
        return None
    # States saved before they were compressed are plain pickles (protocol 5: b"\x80\x05").
    state = _plain_loads(decompress(blob) if blob[:4] == _ZSTD_MAGIC else blob)
    if not isinstance(state, dict):  # a stored state is never None, nor anything but a map
        raise ValueError(f"a saved parser state is a {type(state).__name__}, not a map")
    return state


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
        kernels_failed=row["kernels_failed"],
        current_kernel=row["current_kernel"],
        latest=SimMetrics.model_validate_json(row["latest"]),
        log_tail=json.loads(row["log_tail"]),
        shard=shard_from_row(row),
        retry_of=row["retry_of"],
        missing_log_chunks=_missing_log_chunks(row),
        **_variant(row),
    )


def _missing_log_chunks(row: aiosqlite.Row) -> list[tuple[int, int]]:
    """Migration 11: the runs of chunks that never arrived; NULL none."""
    value = row["missing_log_chunks"] if "missing_log_chunks" in row.keys() else None
    return [(first, last) for first, last in json.loads(value)] if value else []


def _variant(row: aiosqlite.Row) -> dict[str, Any]:
    """A sim's options and label (migration 6), absent or NULL for a sim without options; and
    what its launch needs of its run entry (migration 9)."""
    keys = row.keys()
    options = row["options"] if "options" in keys else None
    label = row["label"] if "label" in keys else None
    policy: dict[str, Any] = {}
    if "on_kernel_failure" in keys:  # migration 9; NULL: the defaults
        policy["on_kernel_failure"] = row["on_kernel_failure"] or "continue"
        policy["warmup_kernels"] = 1 if row["warmup_kernels"] is None else row["warmup_kernels"]
    if "power" in keys and row["power"]:  # migration 13
        policy["power"] = True
    if "sampling" in keys and row["sampling"]:  # migration 10: a sampled sim
        sample = SimSample.from_json(row["sampling"])
        policy["sampling"] = sample.info
        policy["sample"] = ranges_text(sample.representatives)
    return {"options": json.loads(options) if options else {}, "label": label or "", **policy}


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
        failed=row["failed"],
        estimated_from=row["estimated_from"],
        **_power(row),
    )


# The kernel_power columns a kernel's SELECT joins (NULL for a kernel without power).
POWER_COLUMNS = "kernel_power.avg_w, kernel_power.max_w, kernel_power.min_w, kernel_power.components"
POWER_JOIN = "LEFT JOIN kernel_power USING (sim_id, kernel_index)"


def _power(row: aiosqlite.Row) -> dict[str, Any]:
    """Migration 13: the kernel's power, and the energy it comes to over the kernel's time."""
    if "avg_w" not in row.keys() or row["avg_w"] is None:
        return {}
    power = KernelPower(
        avg_w=row["avg_w"], max_w=row["max_w"], min_w=row["min_w"], components=json.loads(row["components"])
    )
    return {"power": power, "energy_j": power.energy_j(row["sim_time_ns"])}
