"""The simulator screen (`A`, or "Accel-Sim" in the command palette): which simulator the server
uses, and `i` to build the real one here with `cascade simulator install`, its progress shown
as a bar and its output as a log. `x` stops a build (nothing is installed then); `Esc` goes back."""

from __future__ import annotations

import asyncio
import signal

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Header, ProgressBar, RichLog, Static

from cascade_core.models import SimulatorInfo

from ..messages import ReportsWorkerErrors
from ..services import Services
from ..views.simulator import install_argv, is_local, parse_progress, status_lines


class SimulatorScreen(ReportsWorkerErrors, Screen):
    BINDINGS = [
        Binding("escape", "back", "Back", id="simulator.back"),
        Binding("i", "install", "Install real Accel-Sim", id="simulator.install"),
        Binding("x", "stop", "Stop the build", id="simulator.stop"),
    ]
    DEFAULT_CSS = """
    SimulatorScreen #simulator-status { height: auto; padding: 1 2; }
    SimulatorScreen #simulator-progress { height: auto; padding: 0 2; }
    SimulatorScreen #simulator-step { height: auto; padding: 0 2; color: $text-muted; }
    SimulatorScreen #simulator-log { height: 1fr; margin: 1 2 0 2; overflow-y: scroll; }
    """
    ERROR_TITLES = {"simulator": "Simulator", "install": "Install failed"}

    def __init__(self, services: Services) -> None:
        super().__init__()
        self.services = services
        self.info: SimulatorInfo | None = None
        self.process: asyncio.subprocess.Process | None = None
        self.outcome: str | None = None  # "installed", "failed", "stopped" once a build ends

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Asking the server…", id="simulator-status", markup=False)
        yield ProgressBar(total=100, show_eta=False, id="simulator-progress")
        yield Static("", id="simulator-step", markup=False)
        # Wrapped: the installer's reasons are long lines (a URL, then what to do instead), and
        # cut at the pane's edge they said nothing at 80 columns. `min_width`: RichLog renders
        # at least 78 columns by default, wider than its pane at 80 (the margins, the scrollbar
        # the CSS always shows), and the overflow was lost at each wrap.
        yield RichLog(
            id="simulator-log", max_lines=5000, wrap=True, markup=False, highlight=False, min_width=1
        )
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.title = "Cascade · Simulator"
        self.query_one(ProgressBar).display = False
        self.refresh_status()

    @work(exclusive=True, group="simulator", exit_on_error=False)
    async def refresh_status(self) -> None:
        status = await self.services.client.launcher()
        self.info = status.simulator
        self.query_one("#simulator-status", Static).update("\n".join(status_lines(self.info)))

    def building(self) -> bool:
        return self.process is not None and self.process.returncode is None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # `x` is offered while a build runs, `i` while none does (the footer follows).
        if action == "stop":
            return self.building()
        if action == "install":
            return not self.building()
        return True

    def action_back(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.notify("A build is running: x stops it first.", severity="warning")
            return
        self.app.pop_screen()

    def action_install(self) -> None:
        if self.process is not None and self.process.returncode is None:
            return
        if not is_local(self.services.settings.url):
            self.notify(
                "The server is on another host: run `cascade simulator install` there.", severity="warning"
            )
            return
        self._install()

    def action_stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signal.SIGINT)  # the installer removes its partial build

    @work(exclusive=True, group="install", exit_on_error=False)
    async def _install(self) -> None:
        bar, log, step = (
            self.query_one(ProgressBar),
            self.query_one(RichLog),
            self.query_one("#simulator-step", Static),
        )
        bar.display = True
        bar.update(progress=0)
        log.clear()
        self.outcome = None
        self.process = await asyncio.create_subprocess_exec(
            *install_argv(),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        self.refresh_bindings()
        assert self.process.stdout is not None
        async for raw in self.process.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            progress = parse_progress(line)
            if progress is not None:
                bar.update(progress=progress[0] * 100)
                step.update(f"compiling: {progress[1]}")
                continue
            log.write(line)
        code = await self.process.wait()
        self.refresh_bindings()
        self.outcome = "installed" if code == 0 else ("stopped" if code == 130 else "failed")
        if code == 0:
            bar.update(progress=100)
            step.update("Installed: the next run simulates for real.")
            self.notify("Real Accel-Sim installed: new runs simulate for real.", title="Simulator")
        else:
            step.update(
                "Stopped: nothing was installed."
                if code == 130
                else "The build failed: the end of its output, below, says why. Nothing was installed."
            )
        self.refresh_status()
