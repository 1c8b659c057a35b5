"""What a route's documentation is (`RouteDoc`), and every path parameter's meaning: the type the
route docs tables (route_docs.py, config_route_docs.py) are written in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from cascade_core.models import FILE_NAME_PATTERN

SIMULATOR_ONLY = "For simulators only: never call it."


@dataclass(frozen=True)
class RouteDoc:
    summary: str
    """What the route does, in one line: the agent prompt's row and the reference's."""
    response: Any = None
    """The JSON body's type (a model, or `list[Model]`); None for another body (`returns`)."""
    returns: str = ""
    """A body that is no model (text, a file, events, a JSON object of its own), in words."""
    status: int = 200
    query: type[BaseModel] | None = None
    body: type[BaseModel] | str | None = None
    """The JSON body's model, or a body that is no JSON, in words."""
    errors: tuple[tuple[int, str], ...] = ()
    """The route's own errors; those every route shares are the reference's preamble."""
    details: str = ""
    """More than one line can say, for the reference only."""
    simulator_only: bool = False
    """Called by simulators (`cascade worker`): the agent prompt tells agents never to."""
    agent_note: str = ""
    """For a simulator-only route: what the agent prompt adds to SIMULATOR_ONLY."""

    @property
    def prompt_note(self) -> str:
        """The agent prompt's "what it does"."""
        return f"{SIMULATOR_ONLY} {self.agent_note}".rstrip() if self.simulator_only else self.summary


# Every path parameter any route takes, once: by name, or where a name means two things, by the
# path segment before it and its name.
PATH_PARAMS: dict[str, str] = {
    "trace_id": "The trace's `id`, the name it was uploaded under.",
    "run_id": "The run's `id`, such as `run-9f56e171af08`.",
    "sim_id": "The sim's `id`, such as `sim-6b4c91e71437`; find it in `RunDetail.sims`.",
    "gpu-configs/{name}": "A GPU config's `name`, as `GET /api/gpu-configs` lists them.",
    "files/{name}": "The file's name, such as `kernel-stats.csv`: letters, digits, `.`, `_` and `-`, "
    f"1 to 128 characters, not `.` or `..` (`{FILE_NAME_PATTERN}`).",
    "inputs/{path}": "A path `/inputs` lists, relative to the trace's directory.",
}

BAD_FILE_NAME = (422, "`name` is not a file name a sim may use (a trailing newline included).")
