"""The first screen: checks health and the token, and says plainly what is wrong if either fails."""

from __future__ import annotations

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from ..connection.client_errors import ApiError, error_title
from ..messages import Connected, ReportsWorkerErrors
from ..services import Services


class ConnectScreen(ReportsWorkerErrors, Screen):
    BINDINGS = [
        Binding("r", "retry", "Retry", id="connect.retry"),
        Binding("q", "app.quit", "Quit", id="connect.quit"),
    ]
    DEFAULT_CSS = """
    ConnectScreen > Vertical { align: center middle; }
    ConnectScreen #connect-message { width: 80%; max-width: 100; height: auto; padding: 1 2;
                                     border: round $primary; }
    ConnectScreen #connect-message.-problem { border: thick $error; }
    """

    ERROR_TITLES = {"check": "The server answered with an error"}

    def __init__(self, services: Services) -> None:
        super().__init__()
        self.services = services

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical():
            yield Static(f"Connecting to {self.services.settings.url} …", id="connect-message")
        yield Footer(compact=True)  # every key fits 80 columns, `? Help` included

    def on_mount(self) -> None:
        self.title = "Cascade"
        self.action_retry()

    def action_retry(self) -> None:
        message = self.query_one("#connect-message", Static)
        message.remove_class("-problem")
        message.update(f"Connecting to {self.services.settings.url} …")
        self._check()

    @work(exclusive=True, group="check", exit_on_error=False)
    async def _check(self) -> None:
        try:
            health = await self.services.client.check()
        except ApiError as exc:
            self.show_problem(exc)
            raise  # the app notifies it too
        self.post_message(Connected(health))

    def show_problem(self, exc: ApiError) -> None:
        title = error_title(exc, self.ERROR_TITLES["check"])
        message = self.query_one("#connect-message", Static)
        message.add_class("-problem")
        message.update(f"[b]{title}[/b]\n\n{exc}\n\nURL: {self.services.settings.url}\n\nr: retry    q: quit")
