"""What screens ask of the app, as messages (they bubble from a screen to the app), and the one
route by which a failed worker reaches the app's error handler."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from textual.dom import DOMNode
from textual.message import Message
from textual.worker import Worker, WorkerState

from cascade_core.models import RunSummary, TraceSummary


class Connected(Message):
    """Health and the token are good: show the lists."""

    def __init__(self, health: dict[str, Any]) -> None:
        super().__init__()
        self.health = health


class OpenRun(Message):
    def __init__(self, run_id: str) -> None:
        super().__init__()
        self.run_id = run_id


class OpenNewRun(Message):
    """The new-run form, on `trace` (None: the first ready trace)."""

    def __init__(self, trace: TraceSummary | None) -> None:
        super().__init__()
        self.trace = trace


class ConfirmCancel(Message):
    """Ask, then cancel the run's `unfinished` sims."""

    def __init__(self, run_id: str, unfinished: int) -> None:
        super().__init__()
        self.run_id = run_id
        self.unfinished = unfinished


class ManageRun(Message):
    """Ask, then `rerun` the run (same entries), `retry` its failed sims, or `delete` it."""

    def __init__(self, action: str, run: RunSummary) -> None:
        super().__init__()
        self.action = action
        self.run = run


class DeleteTrace(Message):
    """Ask, then delete the trace (the server refuses one an active run uses)."""

    def __init__(self, trace: TraceSummary) -> None:
        super().__init__()
        self.trace = trace


class WorkerFailed(Message):
    """A worker ended with an exception: the app shows it (never a crash, never the token)."""

    def __init__(self, error: BaseException, title: str) -> None:
        super().__init__()
        self.error = error
        self.title = title


# A plain mixin at run time: a DOMNode base placed before Screen or App in the MRO changes how
# Textual resolves their default CSS (their text took its own background colour).
if TYPE_CHECKING:
    _Node = DOMNode
else:
    _Node = object


class ReportsWorkerErrors(_Node):
    """Mixin for the app, screens and panes whose `@work` methods may fail: Textual posts
    `Worker.StateChanged` to the worker's own node only (it does not bubble), so a worker that
    ends in error is posted on as a `WorkerFailed`, which bubbles up to the app's one handler.
    `ERROR_TITLES` names the notification by worker group (default "Error")."""

    ERROR_TITLES: ClassVar[dict[str, str]] = {}

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if event.state == WorkerState.ERROR and worker.error is not None:
            self.post_message(WorkerFailed(worker.error, self.ERROR_TITLES.get(worker.group, "Error")))
