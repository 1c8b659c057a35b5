"""Issue 32: in a sharded run's kernels view, the kernels of a shard that is behind the shards after
it are named from the trace (`TraceDetail.kernels`), never `#4 ?`."""

from __future__ import annotations

import re

from cascade_core.comparison import trace_kernel_names
from cascade_core.models import KernelLaunch
from cascade_tui.views import chart, compare
from cascade_worker.replay_shard import select_kernels
from tests.conftest import ready_trace
from tests.helpers import recorded_log

from .conftest import TRACE, make_app, open_run_screen, serve
from .factories import kstat, sim
from .helpers import screen_text, wait_for_app


def test_a_position_no_sim_reached_is_named_by_the_trace():
    sims = {"s2": sim("s2", gpu_config="A", state="succeeded")}
    kernels = [kstat("s2", 2, 100.0, name="_Z7kernel2v")]  # the last shard's one kernel
    launches = [
        KernelLaunch(kernel_id=n, name=f"_Z7kernel{n - 1}v", grid=(1, 1, 1), block=(32, 1, 1))
        for n in (3, 1, 2)  # the trace's order is by kernel_id
    ]
    names = trace_kernel_names(launches)
    assert names == ["_Z7kernel0v", "_Z7kernel1v", "_Z7kernel2v"]
    rows = compare.kernel_rows(["A"], sims, kernels, names=names)
    assert [r.kernel_name for r in rows] == names
    assert [r.kernel_name for r in compare.kernel_rows(["A"], sims, kernels)] == ["", "", "_Z7kernel2v"]
    totals = compare.config_totals(["A"], sims, kernels)
    text = chart.plain(chart.chart_lines(["A"], rows, totals, compare.rank(totals), {}, False, 80))
    assert "#0 kernel0" in text and "#1 kernel1" in text and "?" not in text


async def test_the_kernels_view_names_a_lagging_shards_kernels(make_server, accelsim_dir, tmp_path):
    server = await serve(make_server, [ready_trace(TRACE)], accelsim_dir=accelsim_dir)
    traces = server.settings.traces_dir / TRACE / "traces"
    traces.mkdir(parents=True)
    (traces / "kernelslist.g").write_text("".join(f"kernel-{n}.traceg\n" for n in range(1, 16)))
    async with server.client() as http:
        body = {"trace_id": TRACE, "entries": [{"gpu_config": "SM7_QV100", "count": 1, "shards": 3}]}
        resp = await http.post("/api/runs", json=body)
        assert resp.status_code == 201, resp.text
        run = resp.json()
        last = max(run["sims"], key=lambda s: s["shard"]["index"])
        shard = last["shard"]
        # Only the last shard has run: the kernels before it are nobody's yet.
        lines = select_kernels(
            recorded_log("SM7_QV100"), shard["kernel_first"] - shard["warmup_kernels"], shard["kernel_last"]
        )
        assert (
            await http.post(f"/api/sims/{last['id']}/heartbeat", json={"state": "running"})
        ).status_code == 200
        resp = await http.post(f"/api/sims/{last['id']}/logs", json={"seq": 0, "lines": lines})
        assert resp.status_code == 204, resp.text
    app = make_app(server, tmp_path)
    async with app.run_test(size=(120, 60)) as pilot:
        screen = await open_run_screen(pilot, run["id"])
        await wait_for_app(pilot, lambda: screen.model.all_kernels(), "the last shard's kernels")
        await pilot.press("k")
        # The trace's names (`ready_trace`'s `_Z6kernel<i>v`) where no sim has been yet.
        await wait_for_app(
            pilot, lambda: "#0 _Z6kernel0v" in screen_text(app), "kernel 0 named from the trace"
        )
        text = screen_text(app)
        assert "#4 _Z6kernel4v" in text and not re.search(r"#\d+ \?", text)
    # The server's comparison (`cascade results --comparison`, agents) names them the same way.
    async with server.client() as http:
        rows = (await http.get(f"/api/runs/{run['id']}/comparison")).json()["rows"]
    assert [r["kernel_name"] for r in rows[:2]] == ["_Z6kernel0v", "_Z6kernel1v"]
