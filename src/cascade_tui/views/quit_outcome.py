"""What quitting the UI did to the operator's unfinished sims, and the line `cascade up` /
`cascade tui` print about it once the UI is gone (the UI's own screen is gone by then: this line is
the only record the operator gets). Pure: no Textual, no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .formatting import plural

# "none": nothing unfinished; "kept": the operator quit leaving them running; "cancelled": the
# operator cancelled them first; "unknown": the server could not be asked.
QuitChoice = Literal["none", "kept", "cancelled", "unknown"]


@dataclass(frozen=True)
class QuitOutcome:
    choice: QuitChoice
    runs: tuple[str, ...] = ()
    sims: int = 0

    def what(self) -> str:
        """`3 sims of run-a, run-b`."""
        return f"{plural(self.sims, 'sim')} of {', '.join(self.runs)}"

    def keep(self, one: str, many: str) -> str:
        """What the sims do, the verb agreeing with their number: `1 sim of run-a keeps
        running`, `3 sims of run-a keep running`."""
        return f"{self.what()} {one if self.sims == 1 else many}"


def up_quit_message(outcome: QuitOutcome | None, *, url: str, started_here: bool) -> str:
    """The line `cascade up` prints after the UI exits: what became of the server and the sims."""
    if not started_here:
        server = f"the server at {url} keeps running (`cascade up` did not start it)"
        if outcome is not None and outcome.choice == "kept":
            return f"cascade up: {server}; {outcome.keep('keeps', 'keep')} running under it"
        if outcome is not None and outcome.choice == "cancelled":
            return f"cascade up: cancelled {outcome.what()}; {server}"
        return f"cascade up: {server}"
    stopped = "stopped the server it started"
    if outcome is None or outcome.choice == "none":
        return f"cascade up: {stopped}"
    if outcome.choice == "cancelled":
        told = "its worker was" if outcome.sims == 1 else "their workers were"
        return f"cascade up: cancelled {outcome.what()} ({told} told to stop); {stopped}"
    if outcome.choice == "kept":
        return (
            f"cascade up: {stopped}; "
            + outcome.keep(
                "keeps running without it and reports its output",
                "keep running without it and report their output",
            )
            + " once a server is back on this data directory (`cascade up` again; "
            + ("cancel it" if outcome.sims == 1 else "cancel them")
            + " there with x)"
        )
    return (
        f"cascade up: {stopped}; it could not be asked about unfinished sims: any keep running "
        "and report to the next `cascade up`"
    )


def tui_quit_message(outcome: QuitOutcome | None, *, url: str) -> str | None:
    """The line `cascade tui` prints after the UI exits, when sims were unfinished."""
    if outcome is None or outcome.choice not in ("kept", "cancelled"):
        return None
    if outcome.choice == "cancelled":
        return f"cascade tui: cancelled {outcome.what()}"
    return f"cascade tui: {outcome.keep('keeps', 'keep')} running under the server at {url}"
