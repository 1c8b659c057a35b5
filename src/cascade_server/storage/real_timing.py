"""A trace's real kernel times as stored (migration 10): the rows of its real_timing.json, read
once when the trace became ready. `/comparison` and `/api/accuracy` read them here; the file is
never parsed again per request (a 12 MB file cost 5 s and 270 MB each time, and held the event
loop)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from cascade_core.real_timing import RealRow

# (kernel name, duration ns) per row, in `/comparison` order.
StoredTiming = list[tuple[str | None, float | None]]


def replace_rows(conn: sqlite3.Connection, trace_id: str, rows: Sequence[RealRow]) -> None:
    """The trace's rows, replacing any it had (a statement per row, on the writer's thread)."""
    conn.execute("DELETE FROM real_timing WHERE trace_id=?", (trace_id,))
    conn.executemany(
        "INSERT INTO real_timing(trace_id, position, kernel_id, kernel_name, duration_ns)"
        " VALUES (?, ?, ?, ?, ?)",
        ((trace_id, position, *row) for position, row in enumerate(rows)),
    )


def delete_rows(conn: sqlite3.Connection, trace_id: str) -> None:
    conn.execute("DELETE FROM real_timing WHERE trace_id=?", (trace_id,))


def read_rows(conn: sqlite3.Connection, trace_id: str) -> StoredTiming:
    """The trace's rows in order (built on the reader's thread: 300,000 rows take a fraction of
    a second there, and the event loop runs meanwhile)."""
    cursor = conn.cursor()
    cursor.row_factory = None
    cursor.execute(
        "SELECT kernel_name, duration_ns FROM real_timing WHERE trace_id=? ORDER BY position", (trace_id,)
    )
    return cursor.fetchall()


def traces_with_rows(conn: sqlite3.Connection) -> set[str]:
    cursor = conn.cursor()
    cursor.row_factory = None
    return {row[0] for row in cursor.execute("SELECT DISTINCT trace_id FROM real_timing")}
