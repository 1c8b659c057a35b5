"""Widget tests with models fed straight in (no server): the sims table's diff repaint and sort,
and the log view's follow/pause bookkeeping."""

from __future__ import annotations

from datetime import timedelta

from textual.app import App, ComposeResult

from cascade_tui.widgets.log_view import LogView
from cascade_tui.widgets.sim_table import SimTable

from .factories import T0, sim


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
        changed[victim] = data[victim].model_copy(update={"latest": data[victim].latest.model_copy(
            update={"gpu_tot_sim_cycle": 123456.0})})
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
