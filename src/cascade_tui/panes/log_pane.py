"""The log pane: the selected sim's log tail, then its live lines; follow/pause; search.

The tail is fetched in full (up to `log_max_lines`) when a sim is selected or the stream starts
again from a snapshot; live chunks that arrive meanwhile are stashed and lined up with the tail
(`loglines.merge_live`), so no line shows twice or goes missing.
"""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, Static

from ..messages import ReportsWorkerErrors
from ..services import Services
from ..views.formatting import plural
from ..views.loglines import compile_search, merge_live
from ..views.reducer import Changes, RunModel
from ..views.sweep import sim_name
from ..widgets.log_view import LogView


def dropped_marker(count: int) -> str:
    """The line shown where live lines were dropped because the UI fell behind."""
    return f"… {plural(count, 'line')} dropped (L saves the full log)"


# What the log pane says of a sim whose simulator has not started, instead of "0 lines".
NOT_STARTED = {"pending": "waiting to start", "launching": "starting"}


class LogSearch(Input):
    """The search box under the log. Esc closes it, and only it (the screen stays)."""

    BINDINGS = [Binding("escape", "dismiss", "Close search", id="log.close_search")]

    class Dismiss(Message):
        """The search box closed (Esc, or a search was submitted)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(placeholder="search the log (regex; Enter to find, Esc to close)", id=id)

    def open(self) -> None:
        self.display = True
        self.focus()

    def action_dismiss(self) -> None:
        self.display = False
        self.post_message(self.Dismiss())


class LogPane(ReportsWorkerErrors, Vertical):
    def __init__(self, model: RunModel, services: Services, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.model = model
        self.services = services
        self.sim_id: str | None = None
        self.loading = False
        self._stash: list[list[str]] = []  # live chunks that came while the tail loads
        self._title = ""
        self._empty_title = "select a sim"  # what the title says while no sim's log is shown

    def compose(self) -> ComposeResult:
        yield Static("", id="log-title")
        yield LogView(self.services.settings.log_max_lines, id="log-view")
        yield LogSearch(id="search")

    def on_mount(self) -> None:
        self.query_one(LogSearch).display = False

    @property
    def view(self) -> LogView:
        return self.query_one(LogView)

    # --- content ------------------------------------------------------------------------------

    def load(self, sim_id: str) -> None:
        """Show `sim_id`'s log: the lines the snapshot has at once, then its full tail."""
        self.sim_id = sim_id
        self._empty_title = "select a sim"
        self.model.watch(sim_id)
        self.loading = True
        self._stash = []
        view = self.view
        view.clear()
        sim = self.model.sims.get(sim_id)
        if sim is not None:
            view.append(list(sim.log_tail))
        self._fetch(sim_id)

    @work(exclusive=True, group="log", exit_on_error=False)
    async def _fetch(self, sim_id: str) -> None:
        try:
            lines, _total = await self.services.client.log_tail(sim_id, self.services.settings.log_max_lines)
        except Exception:  # the app reports it; a cancelled fetch leaves the next one loading
            self.loading = False
            raise
        if sim_id != self.sim_id:
            return
        # Chunks still waiting in the model belong after the stash; take them now.
        stash = self._stash + self.model.take_log_chunks()
        view = self.view
        view.clear()
        view.append(lines)
        view.append(merge_live(lines, stash))
        self.loading = False
        self._stash = []
        self.refresh_title()

    def unload(self, why: str) -> None:
        """Show no sim's log (the table shows no sim), saying `why` in the title."""
        self.sim_id = None
        self.model.watch(None)
        self.loading = False
        self._stash = []
        self.view.clear()
        self._empty_title = why
        self.refresh_title()

    def add(self, changes: Changes) -> None:
        """The watched sim's new lines from a render tick (stashed while the tail loads)."""
        if not changes.log_chunks:
            return
        if self.loading:
            self._stash.extend(changes.log_chunks)
            return
        if changes.log_dropped:
            self.view.append([dropped_marker(changes.log_dropped)])
        self.view.append(changes.log_lines)

    def refresh_title(self) -> None:
        view = self.view
        sim = self.model.sims.get(self.sim_id or "")
        # The keys scroll the log, not the table; zoomed (`z`) the table is hidden.
        zoomed = self.screen.has_class("-zoomed")
        focus = (" · z: sims" if zoomed else " · Tab: sims") if view.has_focus else ""
        if sim is None:
            title = f"log: {self._empty_title}{focus}"
        else:
            # Most useful first, so 80 columns cut only the sim id: following or paused (with
            # the key that resumes), the line count, whose log it is.
            loading = " · loading…" if self.loading else ""
            # The search's place comes first: it is what the operator is stepping through.
            found = f"{view.match_text()} · " if view.match_text() else ""
            if not len(view.store) and sim.state in NOT_STARTED:
                # Not an empty log: a sim with no simulator yet (a slot, the cluster, a person).
                where = f"{NOT_STARTED[sim.state]}: no log yet"
            else:
                where = f"{view.status_text()} · {plural(len(view.store), 'line')}"
            title = (
                f"{found}{where} · log {sim_name(sim, self.model.sims.values())}{loading}{focus} · {sim.id}"
            )
            if view.store.dropped:
                title += f" · {view.store.dropped:,} older lines not kept: download the log for all"
        if view.has_focus:
            title = f"▶ {title}"
        if title != self._title:
            self._title = title
            self.query_one("#log-title", Static).update(title)

    def on_descendant_focus(self) -> None:
        self.refresh_title()

    def on_descendant_blur(self) -> None:
        self.refresh_title()

    # --- following and search -----------------------------------------------------------------

    def follow(self) -> None:
        self.view.action_follow()
        self.refresh_title()

    def open_search(self) -> None:
        self.query_one(LogSearch).open()

    @on(Input.Submitted, "#search")
    def _search_submitted(self, message: Input.Submitted) -> None:
        view = self.view
        text = message.value.strip()
        view.set_search(compile_search(text) if text else None)
        self.query_one(LogSearch).action_dismiss()
        if text and not view.find():
            self.notify(
                f"No line matches {text!r} in the {plural(len(view.store), 'line')} kept.", severity="warning"
            )
        self.refresh_title()

    def clear_search(self) -> bool:
        """Drop the search's highlights; False when there was no search."""
        if self.view.pattern is None:
            return False
        self.view.set_search(None)
        self.query_one(LogSearch).value = ""
        self.refresh_title()
        return True

    def find(self, backwards: bool) -> None:
        """The next (previous) match; with no search yet, open the search box."""
        view = self.view
        if view.pattern is None:
            self.open_search()
            return
        if not view.find(backwards=backwards):
            self.notify("No more matches.", severity="warning", timeout=2)
        self.refresh_title()
