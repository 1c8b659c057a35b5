"""What the server checks of a sim's step timeline (`POST /api/sims/{id}/step-timeline`): only
what the spec says, that `simulated` has a `steps` list and a `summary` object (that `compare` is
an object or null is the model's type), and both are stored as they are. Its size is bounded by
the request body's limit (`CASCADE_MAX_JSON_BYTES`, a 413 past it). Every reader takes what it
can use of any shape (`cascade_core.timeline.stored`), so nothing accepted breaks one later.

Pure: the standard library only."""

from __future__ import annotations

from typing import Any


def spec_problem(simulated: Any) -> str | None:
    """Why `simulated` is not what the spec takes, in one line; None if it is."""
    if not isinstance(simulated, dict):
        return "simulated must be an object"
    if not isinstance(simulated.get("steps"), list):
        return "simulated lacks a steps list"
    if not isinstance(simulated.get("summary"), dict):
        return "simulated lacks a summary object"
    return None
