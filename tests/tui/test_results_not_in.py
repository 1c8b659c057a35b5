"""Issue 32: no config or variant is named fastest, and nothing is a multiple of the fastest, while
another config still has sims running and no result: a baseline still running is no loser. Pure."""

from __future__ import annotations

import re

from cascade_core.models import RunEntry
from cascade_tui.views import chart, compare, result_views, sweep

from .factories import kstats, run, sim

BASE, SLOW = "SM7_QV100", "SM7_QV100[gpgpu_n_clusters=20]"


def sweep_run(base_state: str):
    """The unmodified config (fast, 100 ns a kernel) and a variant with fewer clusters (slow):
    the variant is done, the baseline `base_state`."""
    base = sim("sim-base", gpu_config=BASE, state=base_state, kernels_done=1, kernels_total=2)
    slow = sim(
        "sim-slow",
        gpu_config=BASE,
        options={"-gpgpu_n_clusters": "20"},
        label=SLOW,
        state="succeeded",
        kernels_done=2,
        kernels_total=2,
    )
    entries = [
        RunEntry(gpu_config=BASE, count=1),
        RunEntry(gpu_config=BASE, count=1, options={"-gpgpu_n_clusters": "20"}),
    ]
    kernels = kstats({"sim-base": [100.0], "sim-slow": [400.0, 400.0]})
    detail = run([base, slow], entries=entries, state="active" if base_state == "running" else "partial")
    return detail, kernels


def totals_of(detail, kernels):
    sims = {s.id: s for s in detail.sims}
    return compare.config_totals([BASE, SLOW], sims, kernels)


def test_a_config_still_running_keeps_the_others_from_being_ranked():
    detail, kernels = sweep_run("running")
    totals = totals_of(detail, kernels)
    ranking = compare.rank(totals)
    assert ranking.fastest == () and ranking.multiples == {}
    assert ranking.waiting == (BASE,)
    assert "fastest" not in ranking.sentence().replace("no config is named fastest", "")
    assert ranking.sentence() == (
        f"Waiting for {BASE}: no config is named fastest until every config has a result."
    )
    # The kernels view of the sweep: the slow variant is neither fastest nor a multiple of it.
    view = sweep.sweep_view(detail.entries, totals)
    text = chart.plain(
        chart.chart_lines([BASE, SLOW], [], totals, ranking, {}, False, 100, sweep=view, finished=False)
    )
    assert "gpgpu_n_clusters=20 is fastest" not in text and not re.search(r"20 .*fastest", text)
    assert "Waiting for SM7_QV100" in text
    # `cascade results`: no multiple of a fastest that is not known yet, and the sentence says why.
    records = result_views.total_records(detail, kernels)
    assert [r["vs_fastest"] for r in records] == [None, None]
    assert result_views.ranking_sentence(detail, kernels).startswith("Waiting for SM7_QV100")


def test_once_every_config_is_in_the_fastest_is_named_and_a_failed_one_is_only_missing():
    detail, kernels = sweep_run("succeeded")
    detail = detail.model_copy(
        update={"sims": [s.model_copy(update={"kernels_done": 2}) for s in detail.sims]}
    )
    kernels = kstats({"sim-base": [100.0, 100.0], "sim-slow": [400.0, 400.0]})
    ranking = compare.rank(totals_of(detail, kernels))
    assert ranking.fastest == (BASE,) and ranking.waiting == ()
    # A config whose sims all ended without success waits for nothing: the others are ranked.
    failed, kernels = sweep_run("failed")
    ranking = compare.rank(totals_of(failed, kernels))
    assert ranking.fastest == (SLOW,) and ranking.missing == (BASE,) and ranking.waiting == ()
