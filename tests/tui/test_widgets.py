"""Widget tests with models fed straight in (no server): the sims table's diff repaint and sort,
the log view's follow/pause bookkeeping and the log pane's marker for dropped lines."""

from __future__ import annotations

from datetime import timedelta

from textual.app import App, ComposeResult

from cascade_core.models import LogEvent
from cascade_tui.connection.client import CascadeClient
from cascade_tui.panes.log_pane import LogPane, dropped_marker
from cascade_tui.services import Services
from cascade_tui.views import reducer
from cascade_tui.views.reducer import RunModel
from cascade_tui.widgets.log_view import LogView
from cascade_tui.widgets.sim_table import SimTable

from .factories import T0, sim
from .helpers import tui_settings


class TableApp(App):
    def __init__(self) -> None:
        super().__init__()
        self.clock = T0 + timedelta(seconds=10)

    def compose(self) -> ComposeResult:
        yield SimTable(now=lambda: self.clock, id="sims")
        yield LogView(max_lines=1000, id="log")


def sims(n: int) -> dict:
    out = {}
    for i in range(n):
        s = sim(f"sim-{i:012x}", gpu_config=f"CFG{i % 3}", replica=i // 3, kernels_done=i % 6)
        out[s.id] = s
    return out


async def test_table_repaints_only_changed_rows_and_keeps_the_cursor_on_its_sim_when_sorting():
    app = TableApp()
    async with app.run_test(size=(100, 20)) as pilot:
        table = app.query_one(SimTable)
        data = sims(9)
        table.update_rows(data, reset=True)
        await pilot.pause()
        table.move_cursor_to(4)
        chosen = table.cursor_id
        table.update_rows(data)  # fills the per-row text cache for visible rows
        table.repaints = 0
        table.update_rows(data)  # nothing changed
        assert table.repaints == 0

        changed = dict(data)
        victim = table.order[2]
        changed[victim] = data[victim].model_copy(
            update={"latest": data[victim].latest.model_copy(update={"gpu_tot_sim_cycle": 123456.0})}
        )
        table.update_rows(changed, {victim})
        assert table.repaints == 1  # one row, one repaint

        table.set_sort("progress", reverse=True)
        assert table.cursor_id == chosen and table.order[table.cursor_index] == chosen
        table.set_sort("config", reverse=False)
        assert table.cursor_id == chosen

        app.clock += timedelta(seconds=1)  # heartbeat ages of every running sim move on
        table.update_rows(changed)
        assert table.repaints == 1 + len(changed)


async def test_log_view_follows_pauses_counts_and_keeps_the_view_when_old_lines_drop():
    app = TableApp()
    async with app.run_test(size=(100, 20)) as pilot:
        view = app.query_one(LogView)
        view.append([f"line {i}" for i in range(500)])
        await pilot.pause()
        assert view.following and view.scroll_y == view.max_scroll_y
        view.scroll_to(y=100, animate=False, immediate=True)
        await pilot.pause()
        assert not view.following
        top = view.store.lines[int(view.scroll_y)]
        view.append([f"more {i}" for i in range(600)])  # over the 1,000-line cap: drops old lines
        await pilot.pause()
        assert view.new_since_pause == 600 and view.store.dropped > 0
        assert view.store.lines[int(view.scroll_y)] == top  # same lines still in view
        assert "paused +600 lines" in view.status_text()
        view.action_follow()
        await pilot.pause()
        assert view.following and view.scroll_y == view.max_scroll_y


class LogPaneApp(App):
    def __init__(self, tmp_path) -> None:
        super().__init__()
        settings = tui_settings("http://127.0.0.1:9", None, tmp_path)
        self.model = RunModel()
        self.services = Services(CascadeClient(settings.url, None), settings, lambda: T0)

    def compose(self) -> ComposeResult:
        yield LogPane(self.model, self.services, id="log")


async def test_log_pane_marks_live_lines_dropped_while_the_ui_fell_behind(tmp_path, monkeypatch):
    monkeypatch.setattr(reducer, "MAX_PENDING_LOG_LINES", 4)
    app = LogPaneApp(tmp_path)
    async with app.run_test():
        pane = app.query_one(LogPane)
        app.model.watch("sim-0")  # as `load` does, without fetching a tail
        for chunk in (["a", "b"], ["c", "d"], ["e", "f"]):
            app.model.apply(LogEvent(sim_id="sim-0", lines=chunk))
        pane.add(app.model.take_changes())
        assert pane.view.store.lines == [dropped_marker(2), "c", "d", "e", "f"]
        assert dropped_marker(2) == "… 2 lines dropped (L saves the full log)"
        pane.add(reducer.Changes(log_chunks=[["g"]]))  # nothing dropped: no marker
        assert pane.view.store.lines[-2:] == ["f", "g"]
