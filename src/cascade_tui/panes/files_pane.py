"""The files pane: the run's results JSON and Perfetto trace, the selected sim's log and the files
it uploaded, each saved to the download directory with Enter; the run screen's save keys
(d, p, L, F) come here too."""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from cascade_core.models import RunFile, SimSummary

from ..messages import ReportsWorkerErrors
from ..services import Services
from ..views.formatting import human_bytes, plural, saved_message

DOWNLOADS = ("results", "perfetto", "log", "files")  # what `download` saves


class FilesPane(ReportsWorkerErrors, Vertical):
    def __init__(self, run_id: str, services: Services, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.run_id = run_id
        self.services = services
        self.sim: SimSummary | None = None
        self._files: list[RunFile] = []

    def compose(self) -> ComposeResult:
        yield Static("", id="files-title")
        yield OptionList(id="files-list")

    def on_mount(self) -> None:
        self._update_title()

    @property
    def options(self) -> OptionList:
        return self.query_one("#files-list", OptionList)

    def show(self, sim: SimSummary | None) -> None:
        """List what can be saved for the run and `sim`, then fetch the run's files again."""
        self.sim = sim
        self._fill()
        self.load()

    @work(exclusive=True, group="files", exit_on_error=False)
    async def load(self) -> None:
        self._files = await self.services.client.run_files(self.run_id)
        self._fill()

    def _fill(self) -> None:
        options: list[Option | None] = [
            Option("Run results (JSON, every sim's stats and the comparison)", id="results"),
            Option("Perfetto trace of the run (JSON, open in ui.perfetto.dev)", id="perfetto"),
        ]
        sim = self.sim
        if sim is not None:
            options.append(Option(f"Log of {sim.label} #{sim.replica} ({sim.id}.log)", id="log"))
            mine = [f for f in self._files if f.sim_id == sim.id]
            if mine:
                options.append(
                    Option(
                        f"All {plural(len(mine), 'file')} of {sim.label} #{sim.replica}"
                        if len(mine) > 1
                        else f"The only file of {sim.label} #{sim.replica}",
                        id="files",
                    )
                )
            options.append(None)
            for f in mine:
                options.append(
                    Option(f"{f.name}  {human_bytes(f.size)}  {f.content_type}", id=f"file:{f.name}")
                )
            if not mine:
                options.append(Option("(this sim has uploaded no files yet)", id="none", disabled=True))
        files_list = self.options
        highlighted = files_list.highlighted
        files_list.clear_options()
        files_list.add_options(options)
        if highlighted is not None and highlighted < files_list.option_count:
            files_list.highlighted = highlighted
        elif files_list.option_count:
            files_list.highlighted = 0  # Enter saves something at once, arrows start from the top

    def _update_title(self) -> None:
        focused = self.options.has_focus
        self.query_one("#files-title", Static).update(
            ("▶ " if focused else "") + "Enter saves the highlighted item to "
            f"{self.services.settings.download_dir}" + ("" if focused else " · Tab: this list")
        )

    def on_descendant_focus(self) -> None:
        self._update_title()

    def on_descendant_blur(self) -> None:
        self._update_title()

    # --- downloads ------------------------------------------------------------------------------

    @on(OptionList.OptionSelected, "#files-list")
    def _chosen(self, message: OptionList.OptionSelected) -> None:
        option_id = message.option.id or ""
        sim_id = self.sim.id if self.sim else None
        if option_id.startswith("file:"):
            self._download_file(sim_id, option_id[5:])
        elif option_id in DOWNLOADS:
            self.download(option_id, sim_id)

    def download(self, what: str, sim_id: str | None) -> None:
        """Save `what` (one of DOWNLOADS) of the run, or of `sim_id` for a log or its files."""
        if what in ("log", "files") and sim_id is None:
            self.notify("Select a sim first.", severity="warning")
            return
        self._download(what, sim_id)

    @work(group="downloads", exit_on_error=False)
    async def _download(self, what: str, sim_id: str | None) -> None:
        client, dest = self.services.client, self.services.settings.download_dir
        if what == "results":
            paths = [
                await client.download(f"/api/runs/{self.run_id}/results", dest, f"{self.run_id}-results.json")
            ]
        elif what == "perfetto":
            paths = [
                await client.download(
                    f"/api/runs/{self.run_id}/perfetto", dest, f"{self.run_id}-perfetto.json"
                )
            ]
        elif what == "log":
            paths = [await client.download(f"/api/sims/{sim_id}/log", dest, f"{sim_id}.log")]
        else:
            files = await client.sim_files(sim_id or "")
            if not files:
                self.notify("This sim has uploaded no files yet.", severity="warning")
                return
            paths = [
                await client.download(f"/api/sims/{sim_id}/files/{f.name}", dest / (sim_id or ""), f.name)
                for f in files
            ]
        self.notify(saved_message(paths), title="Download saved", markup=False)

    @work(group="downloads", exit_on_error=False)
    async def _download_file(self, sim_id: str | None, name: str) -> None:
        path = await self.services.client.download(
            f"/api/sims/{sim_id}/files/{name}", self.services.settings.download_dir / (sim_id or ""), name
        )
        self.notify(saved_message([path]), title="Download saved", markup=False)
