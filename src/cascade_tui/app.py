"""The Textual app: screens, app-wide keys, the command palette and error reporting.

Screens: Connect (health + token check), Traces, Runs (two modes, `t` / `r`), a Run (pushed on
Runs), New run (pushed), and modals (confirm, `?` help). Every key is a `Binding` with an id; the
footer, the help screen and the command palette are all built from the active bindings. Screens
get what they use as `Services` and ask the app for the rest by message (`messages.py`); a worker
of any screen or pane that fails ends in `_worker_failed`, the one place errors are shown.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from cascade_core.models import RunSummary, utcnow
from cascade_core.run_actions import cancel_refusal, refusal, unfinished_sims

from .connection.client import CascadeClient
from .connection.client_errors import error_title
from .connection.config import TuiSettings
from .exit_guard import ExitGuard
from .messages import (
    ConfirmCancel,
    Connected,
    DeleteTrace,
    ManageRun,
    OpenNewRun,
    OpenRun,
    ReportsWorkerErrors,
    WorkerFailed,
)
from .screens.connect import ConnectScreen
from .screens.modals import ConfirmScreen, HelpScreen, QuitScreen, binding_rows
from .screens.new_run import NewRunScreen
from .screens.run import RunScreen
from .screens.runs_list import RunsScreen
from .screens.traces_list import TracesScreen
from .services import Services
from .views.formatting import human_bytes, plural, sentence
from .views.quit_outcome import QuitOutcome
from .views.run_rows import entries_label

TEXTUAL_COMMANDS_KEPT = {"Theme", "Screenshot"}
QUIT_CHECK_TIMEOUT_S = 3.0


class CascadeApp(ReportsWorkerErrors, App[int]):
    CSS_PATH = Path(__file__).with_name("cascade.tcss")
    TITLE = "Cascade"
    ENABLE_COMMAND_PALETTE = True
    ERROR_TITLES = {"cancel": "Cancel failed", "manage": "Not done"}
    BINDINGS = [
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("question_mark", "help", "Help", id="app.help"),
        # Everywhere (a run screen included, where they close it); shown in the footer by the
        # list screens only: the run screen needs the room.
        Binding("t", "goto('traces')", "Traces list", show=False, id="app.traces"),
        Binding("r", "goto('runs')", "Runs list", show=False, id="app.runs"),
        Binding("ctrl+p", "command_palette", "Commands", show=False, id="app.commands"),
        # The simulator screen: which simulator runs, and installing the real Accel-Sim.
        Binding("A", "simulator", "Accel-Sim simulator: status and install", show=False, id="app.simulator"),
    ]

    def __init__(
        self,
        settings: TuiSettings,
        *,
        client: CascadeClient | None = None,
        now: Callable[[], datetime] = utcnow,
        guard: ExitGuard | None = None,
        open_run: str | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings
        self.client = client or CascadeClient(settings.url, settings.token_value())
        self.now = now
        self.services = Services(self.client, settings, now)
        self.add_mode("traces", lambda: TracesScreen(self.services))
        self.add_mode("runs", lambda: RunsScreen(self.services))
        self.health: dict[str, Any] = {}
        self.is_connected = False
        self._guard = guard
        self._open_run_at_start = open_run
        self.errors: list[str] = []  # every error shown, newest last (tests and the log)
        # What `q` did to unfinished sims, for the line printed after the UI is gone.
        self.quit_outcome: QuitOutcome | None = None

    # --- lifecycle ---------------------------------------------------------------------------

    def on_mount(self) -> None:
        if self._guard is not None:
            # SIGHUP/SIGTERM or a hung-up terminal: the guard thread asks us to exit (restoring
            # the terminal if it is still there) and forces the exit if we are stuck.
            loop = asyncio.get_running_loop()
            self._guard.set_request_exit(lambda signum: loop.call_soon_threadsafe(self.exit, 128 + signum))
        self.push_screen(ConnectScreen(self.services))

    async def on_unmount(self) -> None:
        await self.client.aclose()

    @on(Connected)
    def connected(self, message: Connected) -> None:
        """The connect screen found health and the token good."""
        health = self.health = message.health
        self.is_connected = True
        workspace = health.get("workspace")
        self.sub_title = f"{self.settings.url}" + (f" · {workspace}" if workspace else "")
        self.switch_mode("runs")
        if self._open_run_at_start:
            self.open_run(self._open_run_at_start)
            self._open_run_at_start = None

    # --- navigation --------------------------------------------------------------------------

    def action_goto(self, mode: str) -> None:
        """The traces or runs list itself, from anywhere: a run screen (or a new-run form) on top
        of that list is closed, so `r` on a run screen is "back to the runs list"."""
        if not self.is_connected:
            return
        if self.current_mode != mode:
            self.switch_mode(mode)
        while len(self.screen_stack) > 1 and not isinstance(self.screen, (RunsScreen, TracesScreen)):
            self.pop_screen()

    def action_simulator(self) -> None:
        from .screens.simulator import SimulatorScreen

        if self.is_connected and not isinstance(self.screen, SimulatorScreen):
            self.push_screen(SimulatorScreen(self.services))

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(self.screen))

    @on(OpenRun)
    def _open_run(self, message: OpenRun) -> None:
        self.open_run(message.run_id)

    def open_run(self, run_id: str) -> None:
        if self.current_mode != "runs":
            self.switch_mode("runs")
        # Only the runs list stays under a run screen.
        while len(self.screen_stack) > 1 and not isinstance(self.screen, RunsScreen):
            self.pop_screen()
        if isinstance(self.screen, RunsScreen):
            self.screen.select(run_id)  # back on the list, the cursor is on the run just left
        self.push_screen(RunScreen(run_id, self.services))

    @on(OpenNewRun)
    def open_new_run(self, message: OpenNewRun) -> None:
        trace = message.trace
        if trace is not None and trace.sample:
            self.notify(
                "The sample trace has no instruction traces, so it cannot start a run. "
                "Upload a trace with `cascade upload`.",
                severity="warning",
            )
            return
        if trace is not None and trace.state != "ready":
            verb = "has failed" if trace.state == "failed" else f"is still {trace.state}"
            self.notify(f"Trace {trace.id} {verb}; runs start on ready traces.", severity="warning")
            return
        self.push_screen(NewRunScreen(trace, self.services))

    @on(ConfirmCancel)
    def confirm_cancel(self, message: ConfirmCancel) -> None:
        run_id, unfinished = message.run_id, message.unfinished
        if reason := cancel_refusal(run_id, unfinished):
            self.notify(f"{sentence(reason)}.")
            return
        self.push_screen(
            ConfirmScreen(
                f"Cancel {run_id}?",
                f"{unfinished} unfinished sim{'s' if unfinished != 1 else ''} will be "
                "stopped and marked cancelled. Finished sims keep their results.",
                "cancel the run",
                "let it run",
            ),
            partial(self._cancel_if, run_id),
        )

    def _cancel_if(self, run_id: str, yes: bool | None) -> None:
        if yes:
            self._cancel(run_id)

    @work(group="cancel", exit_on_error=False)
    async def _cancel(self, run_id: str) -> None:
        run = await self.client.cancel_run(run_id)
        self.notify(
            f"Cancelled {run_id}: {plural(run.sim_counts.get('cancelled', 0), 'sim')} cancelled.",
            title="Cancel",
        )

    # --- managing runs and traces ------------------------------------------------------------

    @on(ManageRun)
    def manage_run(self, message: ManageRun) -> None:
        run, action = message.run, message.action
        entries = entries_label(run.entries)
        sims = sum(run.sim_counts.values())
        failed = run.sim_counts.get("failed", 0)
        if reason := refusal(action, run):
            # The server would refuse (409): say so at once rather than after a question.
            hint = " (x), then delete it" if action == "delete" else ""
            self.notify(f"{sentence(reason)}{hint}.", severity="warning")
            return
        title, body = {
            "rerun": (
                f"Re-run {run.id}?",
                f"A new run of {run.trace_id} with the same entries: {entries} "
                f"({plural(sims, 'sim')}). This run stays as it is.",
            ),
            "retry": (
                f"Retry the failed sims of {run.id}?",
                f"A new run of {run.trace_id} with one sim for each of its "
                f"{plural(failed, 'failed sim')}. This run stays as it is.",
            ),
            "delete": (
                f"Delete {run.id}?",
                f"Its {plural(sims, 'sim')}, their logs, results and files are removed "
                "from the server. This cannot be undone.",
            ),
        }[action]
        verbs = {"delete": ("delete", "keep it")}.get(action, ("start it", "don't"))
        self.push_screen(ConfirmScreen(title, body, *verbs), partial(self._manage_if, action, run.id))

    @on(DeleteTrace)
    def delete_trace(self, message: DeleteTrace) -> None:
        trace = message.trace
        self.push_screen(
            ConfirmScreen(
                f"Delete trace {trace.id}?",
                f"Its {plural(trace.kernel_count, 'kernel')} and files "
                f"({human_bytes(trace.bytes)}) are removed from the server; runs of it "
                "keep their results and a record of this trace (one uploaded later "
                "under the same id is another trace). The server refuses while an "
                "active run uses it. This cannot be undone.",
                "delete",
                "keep it",
            ),
            partial(self._manage_if, "delete_trace", trace.id),
        )

    def _manage_if(self, action: str, target: str, yes: bool | None) -> None:
        if yes:
            self._manage(action, target)

    @work(group="manage", exit_on_error=False)
    async def _manage(self, action: str, target: str) -> None:
        client = self.client
        if action in ("rerun", "retry"):
            new = await (client.rerun(target) if action == "rerun" else client.retry(target))
            self.notify(
                f"Started {new.id} ({plural(len(new.sims), 'sim')}).",
                title="Re-run" if action == "rerun" else "Retry",
            )
            self.open_run(new.id)
            return
        if action == "delete":
            await client.delete_run(target)
            if isinstance(self.screen, RunScreen) and self.screen.run_id == target:
                self.pop_screen()
        else:
            await client.delete_trace(target)
        self.notify(f"Deleted {target}.", title="Delete")
        if isinstance(self.screen, (RunsScreen, TracesScreen)):
            self.screen.poll()

    # --- quitting ------------------------------------------------------------------------------

    async def action_quit(self) -> None:
        """Quit; with sims of the operator's runs still going, ask first (cancel them, leave them
        running, or stay). If the server cannot say, quit: the UI must never trap the operator."""
        if not isinstance(self.screen, QuitScreen):
            self._quit_or_ask()

    @work(group="quit", exclusive=True, exit_on_error=False)
    async def _quit_or_ask(self) -> None:
        active: list[RunSummary] = []
        asked = False
        if self.is_connected:
            try:
                runs = await asyncio.wait_for(self.client.runs(), QUIT_CHECK_TIMEOUT_S)
                asked = True
            except Exception:  # noqa: BLE001 - an unreachable server has nothing to ask about
                runs = []
            active = [r for r in runs if not r.sample and unfinished_sims(r)]
        if not active:
            self.quit_outcome = QuitOutcome("none" if asked else "unknown")
            self.exit()
            return
        sims = sum(unfinished_sims(r) for r in active)
        body = (
            f"{plural(sims, 'sim')} of {plural(len(active), 'run')} "
            f"({', '.join(r.id for r in active)}) not finished."
        )
        answer = await self.push_screen_wait(QuitScreen(body))
        if answer == "stay":
            return
        if answer == "cancel":
            for run in active:
                try:
                    await self.client.cancel_run(run.id)
                except Exception as exc:  # noqa: BLE001 - said, and the operator stays
                    self.report_error(exc, "Cancel failed")
                    return
        self.quit_outcome = QuitOutcome(
            "cancelled" if answer == "cancel" else "kept", tuple(r.id for r in active), sims
        )
        self.exit()

    # --- errors and commands -----------------------------------------------------------------

    @on(WorkerFailed)
    def _worker_failed(self, message: WorkerFailed) -> None:
        """Every worker's error, of any screen or pane, ends here (`messages.ReportsWorkerErrors`)."""
        self.report_error(message.error, error_title(message.error, message.title))

    def report_error(self, exc: BaseException, title: str = "Error") -> None:
        """Show an error as a notification; never a crash, never the token."""
        text = str(exc) or type(exc).__name__
        token = self.settings.token_value()
        if token:
            text = text.replace(token, "…")
        self.errors.append(text)
        self.notify(text, title=title, severity="error", timeout=8)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        # Every key binding of the screen the palette was opened on, as a command.
        # Cascade's keys only (Textual's widget keys would bury them), then a few of Textual's
        # own commands that Cascade has no key for.
        for key, description, binding_id in binding_rows(screen):
            active = next(
                (a for a in screen.active_bindings.values() if (a.binding.id or "") == binding_id), None
            )
            if not binding_id or active is None or binding_id in ("app.commands",):
                continue
            yield SystemCommand(
                description,
                f"key {key}  ({binding_id})",
                partial(self._run_binding, active.binding.action, active.node),
            )
        for command in super().get_system_commands(screen):
            if command.title in TEXTUAL_COMMANDS_KEPT:
                yield command

    async def _run_binding(self, action: str, node: Any) -> None:
        await self.run_action(action, node)
