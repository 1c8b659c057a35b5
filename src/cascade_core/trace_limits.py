"""The bounds an uploaded trace is held to, beside those of `shared.bounded_read` (line length,
whole-file reads): what a launch shape may be, how big `metadata.json` may be and what it may
list, and how long the text fields a trace summary carries may be. Pure; the README's "Limits"
list states the same numbers."""

from __future__ import annotations

from cascade_core.bounded_read import METADATA_MAX_BYTES, MiB

# CUDA's own maxima (every arch Accel-Sim models): a launch past them never ran on a GPU, and its
# trace would make the post-processor allocate a warp list per 32 of its threads per block.
MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIM = (1024, 1024, 64)
MAX_GRID_DIM = (2**31 - 1, 65535, 65535)

__all__ = ["METADATA_MAX_BYTES"]  # metadata.json's size bound lives with the shared readers

# metadata.json's `files` decides when an upload is complete and is
# checked on every scan, so bounded in count.
METADATA_MAX_FILES = 20_000

# The descriptive fields every `GET /api/traces` carries for each trace.
SUMMARY_MAX_TEXT = 256
SUMMARY_MAX_ITEMS = 64

# A stats file or a kernel list is read whole; a real one is a few MB for the biggest traces.
STATS_MAX_BYTES = 64 * MiB
KERNELSLIST_MAX_BYTES = 16 * MiB
# The header of one kernel trace: the lines before its first instruction.
HEADER_MAX_LINES = 40


def launch_shape_problem(grid: tuple[int, int, int], block: tuple[int, int, int]) -> str | None:
    """Why a kernel launch of this grid and block could not have run under CUDA, or None."""
    if min(block) < 1 or min(grid) < 1:
        return "a grid or block dimension below 1"
    if any(b > m for b, m in zip(block, MAX_BLOCK_DIM)):
        return "block dim ({},{},{}) is past CUDA's maximum ({},{},{})".format(*block, *MAX_BLOCK_DIM)
    if block[0] * block[1] * block[2] > MAX_THREADS_PER_BLOCK:
        return (
            f"block dim ({block[0]},{block[1]},{block[2]}) has {block[0] * block[1] * block[2]} "
            f"threads, past CUDA's {MAX_THREADS_PER_BLOCK} per block"
        )
    if any(g > m for g, m in zip(grid, MAX_GRID_DIM)):
        return "grid dim ({},{},{}) is past CUDA's maximum ({},{},{})".format(*grid, *MAX_GRID_DIM)
    return None


def clip_text(value: str | None) -> str | None:
    """A descriptive string as a summary carries it: at most SUMMARY_MAX_TEXT characters."""
    if value is None or len(value) <= SUMMARY_MAX_TEXT:
        return value
    return value[: SUMMARY_MAX_TEXT - 1] + "…"


def clip_list(values: list[str]) -> list[str]:
    """At most SUMMARY_MAX_ITEMS strings, each clipped (the whole list stays in `metadata`)."""
    return [clip_text(v) or "" for v in values[:SUMMARY_MAX_ITEMS]]
