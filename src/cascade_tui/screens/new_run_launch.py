"""The new-run form's launch (Enter): above `CONFIRM_ABOVE` sims in total a confirmation listing
the entries first; launched once, then the run opens."""

from __future__ import annotations

from functools import partial

from textual import work
from textual.widgets import Static

from cascade_core.models import RunCreate

from ..messages import OpenRun
from ..views.formatting import plural
from .modals import ConfirmScreen
from .new_run_plan import CONFIRM_ABOVE, PlanLines, sims_of


class Launch(PlanLines):
    def action_launch(self) -> None:
        if self.launching or self.launched_run:
            return
        trace = self.trace
        entries = self._entries()
        if trace is None or trace.state != "ready" or trace.sample:
            self.notify("This trace cannot start a run.", severity="error")
            return
        if not entries:
            self.notify("Pick at least one config (space).", severity="warning")
            return
        total = sims_of(entries)
        body = RunCreate(trace_id=trace.id, entries=entries)
        if total > CONFIRM_ABOVE:
            listing = "\n".join(
                f"  {e.variant:<22} × {e.count}" + (f" in {e.shards} shards" if e.shards > 1 else "")
                for e in entries
            )
            self.app.push_screen(
                ConfirmScreen(
                    f"Launch {plural(total, 'sim')}?",
                    f"Trace {trace.id}\n{listing}\n\n{plural(total, 'sim')} in total.",
                    "launch",
                    "go back",
                ),
                partial(self._launch_if, body),
            )
        else:
            self._launch(body)

    def _launch_if(self, body: RunCreate, yes: bool | None) -> None:
        if yes:
            self._launch(body)

    @work(exclusive=True, group="launch", exit_on_error=False)
    async def _launch(self, body: RunCreate) -> None:
        if self.launching or self.launched_run:
            return
        self.launching = True
        self.query_one("#new-run-total", Static).update("launching…")
        try:
            run = await self.services.client.create_run(body)
        except Exception:  # the app reports it; the form can launch again
            self.launching = False
            self._update_total()
            raise
        self.launched_run = run.id
        self.notify(f"Launched {run.id}: {plural(len(run.sims), 'sim')}", title="New run")
        self.app.pop_screen()
        self.app.post_message(OpenRun(run.id))  # this screen is gone: post to the app itself
