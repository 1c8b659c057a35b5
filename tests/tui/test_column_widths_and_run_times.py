"""Column widths and run times, pure: the sims table at 80 columns with long config names, the
kernels chart never wider than its pane, and running totals of configs with no succeeded replica."""

from __future__ import annotations

import pytest

from cascade_core.models import RunEntry
from cascade_tui.views import chart, compare, simrows, sweep

from .factories import T0, kstat, kstats, sim


@pytest.mark.parametrize(
    "configs", [["SM7_QV100"], ["SM75_RTX2060", "SM75_RTX2060_S"], ["SM86_RTX3070", "SM3_KEPLER_TITAN"]]
)
def test_at_80_columns_every_sims_column_fits_whatever_the_config_names(configs):
    lay = simrows.layout(80, simrows.config_width(configs))
    assert [c.key for c in lay.columns] == [
        c.key for c in simrows.COLUMNS if c.priority < simrows.WIDE_ONLY
    ]  # rate/s included
    for name in configs:
        texts = simrows.row_texts(
            simrows.sim_cells(sim(gpu_config=name, kernels_done=150, kernels_total=150), T0, lay.bar_width),
            lay,
        )
        line = " ".join(text for text, _ in texts)
        assert len(line) <= 80, line
        assert name in line and "150/150" in line  # neither the name nor the counts cut


def test_the_progress_bar_keeps_its_meaning_when_it_narrows():
    lay = simrows.layout(80, simrows.config_width(["SM75_RTX2060_S"]))
    assert lay.bar_width == 4
    cells = simrows.sim_cells(sim(kernels_done=3, kernels_total=6), T0, lay.bar_width)
    assert cells["progress"].text == "3/6 ██  "  # half of a 4-cell bar, not a cut 6-cell one


def test_a_config_with_no_succeeded_replica_has_a_partial_running_total_never_ranked():
    sims = {
        "a": sim("a", gpu_config="A", state="succeeded"),
        "b1": sim("b1", gpu_config="B", state="running", kernels_done=2, kernels_total=6),
        "b2": sim("b2", gpu_config="B", state="failed", kernels_done=1, kernels_total=6),
        "c": sim("c", gpu_config="C", state="running", kernels_done=0),
    }
    kernels = kstats({"a": [100.0, 100.0], "b1": [10.0, 10.0], "b2": [10.0]})
    totals = {t.config: t for t in compare.config_totals(["A", "B", "C"], sims, kernels)}
    assert not totals["A"].partial and totals["A"].median_ns == 200.0
    b = totals["B"]
    assert b.partial and b.median_ns == 15.0 and (b.kernels_done, b.kernels_total) == (2, 6)
    assert not totals["C"].partial and totals["C"].median_ns is None  # nothing finished yet
    ranking = compare.rank(list(totals.values()))
    assert ranking.missing == ("B", "C")  # B's 15 ns is not fastest
    # ... and neither is A while B and C still run (issue 32: never rank against what is not in)
    assert ranking.fastest == () and ranking.waiting == ("B", "C")
    text = chart.plain(
        chart.chart_lines(["A", "B", "C"], [], list(totals.values()), ranking, {}, False, 80, finished=False)
    )
    assert "so far" in text and "partial: 2/6 kernels" in text
    assert "(median over succeeded replicas, or so far)" in text  # the title says both


def _a_sweep_with_real_timing():
    """The widest the chart gets: a sweep (variants named by what differs, multiples of the base,
    cycle counts), real timing with MAPE, a partial config, and long demangled kernel names."""
    labels = ["SM7_QV100", *(f"SM7_QV100[gpgpu_n_clusters={n}]" for n in (20, 40, 160))]
    entries = [RunEntry(gpu_config="SM7_QV100", count=1)] + [
        RunEntry(gpu_config="SM7_QV100", count=1, options={"-gpgpu_n_clusters": str(n)})
        for n in (20, 40, 160)
    ]
    entries.append(RunEntry(gpu_config="SM75_RTX2060_S", count=1))
    configs = [*labels, "SM75_RTX2060_S"]
    sims = {
        f"s{i}": sim(f"s{i}", gpu_config=label.split("[")[0], label=label, state="succeeded")
        for i, label in enumerate(labels)
    }
    sims["p"] = sim(
        "p", gpu_config="SM75_RTX2060_S", label="SM75_RTX2060_S", kernels_done=3, kernels_total=15
    )
    name = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIiEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_"
    kernels = [
        kstat(sim_id, k, 1000.0 * (i + 1) * (k + 1), name=name, gpu_tot_sim_cycle=1_234_567 * (i + 1))
        for i, sim_id in enumerate(sims)
        for k in range(2)
    ]
    totals = compare.config_totals(configs, sims, kernels)
    rows = compare.kernel_rows(configs, sims, kernels, [(name, 1500.0), (name, 2500.0)])
    return configs, rows, totals, sweep.sweep_view(entries, totals)


# 78: the pane of an 80-column terminal; 70: the bars beside the sweep chart at 120 columns
@pytest.mark.parametrize("width", [30, 40, 50, 60, 70, 78, 80, 100, 120, 160, 240])
@pytest.mark.parametrize("real", [False, True])
def test_chart_lines_are_never_wider_than_the_pane(width, real):
    totals = [
        compare.ConfigTotal("SM75_RTX2060_S", 100.0, 90.0, 110.0, 2, 2, cycles=1e5),
        compare.ConfigTotal(
            "SM7_QV100", 50.0, None, None, 0, 1, partial=True, kernels_done=3, kernels_total=15
        ),
    ]
    lines = chart.chart_lines(
        ["SM75_RTX2060_S", "SM7_QV100"], [], totals, compare.rank(totals), {}, real, width
    )
    assert max(sum(len(t) for t, _ in line) for line in lines) <= width
    configs, rows, totals, view = _a_sweep_with_real_timing()

    def sweep_lines(**kw) -> list[chart.Line]:
        ranking, mape = compare.rank(totals), compare.mape(rows, configs)
        return chart.chart_lines(configs, rows, totals, ranking, mape, real, width, sweep=view, **kw)

    for finished, stand_in in ((True, None), (False, None), (True, "the stand-in ran")):
        lines = sweep_lines(stand_in=stand_in, finished=finished)
        widest = max(lines, key=lambda line: sum(len(t) for t, _ in line))
        assert sum(len(t) for t, _ in widest) <= width, chart.plain([widest])
    if width >= 70:  # down to the bars beside the sweep chart, labels shrink and no fact is cut
        done = chart.plain(sweep_lines())
        totals_lines = [line for line in done.splitlines() if " cyc" in line or "partial: 3/15" in line]
        assert len(totals_lines) == 5, done
        assert all(line.rstrip().endswith(" cyc") for line in totals_lines[:4]), done
        assert [line.count("x base") for line in totals_lines[1:4]] == [1, 1, 1], done
        assert all(("MAPE" in line) == real for line in totals_lines[:4]), done
        assert "partial: 3/15 kernels" in totals_lines[4], done


def test_elapsed_and_eta_from_kernels_done_and_shown_when_wide():
    from datetime import timedelta

    running = sim(state="running", started_at=T0, kernels_done=2, kernels_total=6)
    now = T0 + timedelta(seconds=60)
    assert simrows.elapsed_seconds(running, now) == 60.0
    assert simrows.eta_seconds(running, now) == 120.0  # 30 s a kernel, 4 to go
    done = sim(
        state="succeeded",
        started_at=T0,
        finished_at=T0 + timedelta(seconds=90),
        kernels_done=6,
        kernels_total=6,
    )
    assert simrows.elapsed_seconds(done, now) == 90.0 and simrows.eta_seconds(done, now) is None
    assert simrows.eta_seconds(sim(state="running", started_at=T0, kernels_done=0), now) is None
    wide = simrows.layout(120)
    texts = dict(
        zip(
            [c.key for c in wide.columns],
            (t.strip() for t, _ in simrows.row_texts(simrows.sim_cells(running, now), wide)),
        )
    )
    assert texts["elapsed"] == "1m00s" and texts["eta"] == "2m00s"
    assert "eta" not in [c.key for c in simrows.layout(80).columns]


def test_run_duration_until_the_last_sim_ended_or_so_far():
    from datetime import timedelta

    ended = [
        sim("a", state="succeeded", finished_at=T0 + timedelta(seconds=100)),
        sim("b", state="failed", finished_at=T0 + timedelta(seconds=252)),
    ]
    now = T0 + timedelta(hours=1)
    assert simrows.run_duration(T0, ended, now) == "took 4m12s"
    going = ended + [sim("c", state="running")]
    assert simrows.run_duration(T0, going, T0 + timedelta(seconds=30)) == "30s so far"


def _run(state, created, finished=None, started=None, counts=None, **flags):
    from cascade_core.models import RunEntry, RunSummary

    return RunSummary(
        id="run-0123456789ab",
        trace_id="tinyformer-step-sm70",
        created_at=created,
        state=state,
        entries=[RunEntry(gpu_config="SM7_QV100", count=2)],
        sim_counts=counts or {"succeeded": 2},
        started_at=started,
        finished_at=finished,
        **flags,
    )


def test_the_runs_list_shows_how_long_a_run_took_or_has_run_so_far():
    from datetime import timedelta
    from types import SimpleNamespace

    from cascade_tui.screens.runs_list import RunsScreen
    from cascade_tui.views.formatting import run_took
    from cascade_tui.views.run_rows import run_time

    now = T0 + timedelta(hours=2)
    done = _run("succeeded", T0, finished=T0 + timedelta(seconds=252), started=T0 + timedelta(seconds=3))
    going = _run(
        "active",
        now - timedelta(seconds=65),
        started=now - timedelta(seconds=60),
        counts={"running": 1, "succeeded": 1},
    )
    assert run_time(done, now) == "4m12s"  # created to the last sim's end, not to now
    assert run_time(going, now) == "1m05s"  # so far
    assert run_took(done.created_at, done.finished_at, now) == "took 4m12s"
    assert run_took(going.created_at, None, now) == "1m05s so far"
    screen = SimpleNamespace(marked=set(), services=SimpleNamespace(now=lambda: now))
    titles = [c.title for c in RunsScreen.COLUMNS]
    rows = [RunsScreen.row_cells(screen, run, now) for run in (done, going)]
    assert dict(zip(titles, (text for text, _ in rows[0])))["time"] == "4m12s"
    # `s` on the time column sorts by seconds, not by the text ("1m05s" < "4m12s" < "59s")
    assert RunsScreen.sort_value(screen, done, "time") == 252.0
    assert RunsScreen.sort_value(screen, going, "time") == 65.0
    assert "(took 4m12s) on" in RunsScreen.detail_text(screen, done)
    assert "(1m05s so far) on" in RunsScreen.detail_text(screen, going)
    waiting = _run("active", now - timedelta(seconds=5), counts={"pending": 2})
    assert "(5s so far, no sim started yet)" in RunsScreen.detail_text(screen, waiting)


@pytest.mark.parametrize("width", [78, 80])  # 78: beside the list's scrollbar
def test_at_80_columns_the_runs_list_keeps_the_time_and_cuts_no_state(width):
    from datetime import timedelta
    from types import SimpleNamespace

    from cascade_tui.screens.runs_list import RunsScreen
    from cascade_tui.views.columns import fit

    now = T0 + timedelta(days=3)
    runs = [
        _run("succeeded", T0, finished=T0 + timedelta(hours=26)),
        _run("partial", T0, finished=T0 + timedelta(seconds=9), counts={"succeeded": 12, "failed": 52}),
        _run("active", T0, counts={"running": 1}, replay=True),
    ]
    screen = SimpleNamespace(marked={runs[0].id}, services=SimpleNamespace(now=lambda: now))
    rows = [[text for text, _ in RunsScreen.row_cells(screen, run, now)] for run in runs]
    widths = dict(zip([c.title for c in RunsScreen.COLUMNS], fit(RunsScreen.COLUMNS, rows, width)))
    assert widths["age"] is None  # the least useful goes first
    kept = {title: w for title, w in widths.items() if w is not None}
    assert list(kept) == ["run", "trace", "state", "ok", "time", "sims"]
    assert sum(w + 2 for w in kept.values()) == width
    for row in rows:
        cells = dict(zip(widths, row))
        for title in ("run", "trace", "ok", "time"):
            assert len(cells[title]) <= kept[title], (title, cells[title])  # never cut
    assert kept["sims"] >= len("stand-in: ")  # the mark whole
