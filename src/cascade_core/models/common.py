"""What every model module shares: the base model, the clock, SQLite's integer bounds and the
list query's limit."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field

# SQLite stores integers in 64 bits: a larger number must be a 422, not an overflow in the database.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def utcnow() -> datetime:
    return datetime.now(UTC)


class Model(BaseModel):
    # NaN and infinities appear in Accel-Sim stats; JSON has no literal for them, so they travel
    # as the strings "NaN", "Infinity" and "-Infinity" (valid JSON, and a `str` in `float | str`).
    model_config = ConfigDict(ser_json_inf_nan="strings")


class ListQuery(Model):
    """Query parameters of `GET /api/runs` and `GET /api/traces`: the newest `limit` items, of the
    given states only (any state when empty). Unknown parameters are ignored, as on every other
    route: a cache-buster or the `?token=` a browser adds must not break a list."""

    # le: SQLite's LIMIT is a signed 64-bit integer; a larger one overflows in the driver.
    limit: int | None = Field(None, ge=1, le=2**63 - 1, description="At most this many, newest first.")
