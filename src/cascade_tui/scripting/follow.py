"""Follow a run to its end on the event stream, with a progress line on stderr.

On a terminal the line is redrawn in place a few times a second, fitted to its width; in a log
file (not a TTY) a plain line, without the bar and never cut, is written only when the sims'
states change, so a long run does not flood it.
"""

from __future__ import annotations

import os
import shutil
import time
from typing import TextIO

from cascade_core.models import RunState, SimEvent, SimSummary, SnapshotEvent, run_state

from ..connection.client import CascadeClient
from ..views.run_rows import sims_text
from ..views.script_views import progress_line

REDRAW_S = 0.25


class ProgressLine:
    def __init__(self, run_id: str, stream: TextIO) -> None:
        self.run_id = run_id
        self.stream = stream
        self.interactive = bool(getattr(stream, "isatty", lambda: False)())
        self.last_draw = 0.0
        self.last_states = ""
        self.drawn = False

    def update(self, sims: list[SimSummary], final: bool = False) -> None:
        if self.interactive:
            line = progress_line(self.run_id, sims, self._columns())
            now = time.monotonic()
            if final or now - self.last_draw >= REDRAW_S:
                self.last_draw = now
                self._write("\r\x1b[2K" + line + ("\n" if final else ""))
                self.drawn = not final
            return
        states = sims_text(_counts(sims))
        if states != self.last_states or final:
            self.last_states = states
            # No terminal, no width: the plain line, neither a bar sized for one nor cut to it.
            self._write(progress_line(self.run_id, sims, None) + "\n")

    def note(self, text: str) -> None:
        """A line of its own (a dropped connection), without breaking the progress line."""
        self._write(("\r\x1b[2K" if self.interactive and self.drawn else "") + text + "\n")
        self.drawn = False

    def _columns(self) -> int:
        """The width of the terminal the line goes to: stderr's own when it is one (stdout is often
        captured: `RUN=$(cascade run start --wait ...)`), else COLUMNS or 80. Asked on every
        draw, so a resized terminal gets a line that fits."""
        try:
            return os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            return shutil.get_terminal_size().columns

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass  # stderr closed: the exit code still tells


def _counts(sims: list[SimSummary]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for sim in sims:
        counts[sim.state] = counts.get(sim.state, 0) + 1
    return counts


async def wait_for_run(
    client: CascadeClient, run_id: str, stream: TextIO
) -> tuple[RunState, list[SimSummary]]:
    """Follow `run_id` until every sim has finished; its final state and sims. Reconnects after a
    dropped connection (each new connection starts with a fresh snapshot)."""
    progress = ProgressLine(run_id, stream)

    def on_state(state: str, attempt: int, retry_in: float | None) -> None:
        if state == "reconnecting" and retry_in is not None:
            progress.note(f"{run_id}: connection lost, reconnecting in {retry_in:.1f} s (attempt {attempt})")

    sims: dict[str, SimSummary] = {}
    events = client.follow_run(run_id, on_state)
    try:
        async for event in events:
            if isinstance(event, SnapshotEvent):
                sims = {sim.id: sim for sim in event.run.sims}
            elif isinstance(event, SimEvent):
                sims[event.sim.id] = event.sim
            else:
                continue
            ordered = sorted(sims.values(), key=lambda s: (s.gpu_config, s.label, s.replica))
            state = run_state(s.state for s in ordered)
            if state != "active":
                progress.update(ordered, final=True)
                return state, ordered
            progress.update(ordered)
    finally:
        await events.aclose()  # type: ignore[attr-defined]
    raise AssertionError("the event stream ended")  # follow_run never ends by itself
