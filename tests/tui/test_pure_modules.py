"""Unit tests of the TUI's Textual-free modules: formatting, comparison maths, reducer, log lines,
sim rows and config."""

from __future__ import annotations

import ast
import os
import stat
from datetime import timedelta
from pathlib import Path

import pytest

from cascade_core.demangle import demangle
from cascade_core.models import KernelEvent, LogEvent, SimEvent, SnapshotEvent
from cascade_tui.connection.config import ConfigError, load_settings, save_config
from cascade_tui.views import chart, compare, formatting, loglines, simrows
from cascade_tui.views.reducer import RunModel

from .factories import T0, kstat, kstats, run, sim

PKG = Path(__file__).resolve().parents[2] / "src" / "cascade_tui"
NON_UI = [
    "views/formatting.py",
    "views/compare.py",
    "views/reducer.py",
    "views/loglines.py",
    "views/simrows.py",
    "views/chart.py",
    "connection/client.py",
    "connection/config.py",
]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("name", NON_UI)
def test_non_ui_modules_never_import_textual(name):
    assert not any(m.split(".")[0] == "textual" for m in _imports(PKG / name))


def test_package_imports_neither_the_server_nor_the_worker():
    for path in PKG.rglob("*.py"):
        for mod in _imports(path):
            assert not mod.startswith(("cascade_server", "cascade_worker")), f"{path.name} imports {mod}"


# --- formatting --------------------------------------------------------------------------------


def test_demangle_reads_cxx_names_and_falls_back_to_the_identifier():
    assert demangle("_Z10dot_kernelIdEvPKT_S2_PS0_i") == (
        "void dot_kernel<double>(double const*, double const*, double*, int)"
    )
    assert formatting.short_kernel_name("_Z10dot_kernelIdEvPKT_S2_PS0_i") == "dot_kernel<double>"
    assert demangle("_Zbroken") == "_Zbroken"
    assert demangle("plain_c_kernel") == "plain_c_kernel"
    assert formatting.short_kernel_name(None) == ""


def test_progress_bar_is_capped_but_counts_are_not():
    assert formatting.progress_text(6, 4, 4) == "6/4 ████"
    assert formatting.progress_text(0, 4, 4) == "0/4     "
    assert formatting.bar(0.5, 4) == "██  "
    assert formatting.bar(0.5, 1) == "▌"


@pytest.mark.parametrize(
    "value,expected", [(5, "5s"), (185, "3m05s"), (7800, "2h10m"), (3 * 86400 + 7200, "3d2h"), (None, "-")]
)
def test_human_duration(value, expected):
    assert formatting.human_duration(value) == expected


def test_numbers_and_sizes():
    assert formatting.si_number(76713.0) == "76.7k"
    assert formatting.si_number(26560256.0) == "26.6M"
    assert formatting.si_number(None) == "-"
    assert formatting.human_bytes(16_890_250) == "16.1 MB"
    assert formatting.time_ns(5454.06) == "5.45 µs"
    assert formatting.state_label("failed") == "✘ failed"


# --- comparison maths ----------------------------------------------------------------------------


def _sims_two_configs():
    a0 = sim("sim-a0", gpu_config="A", replica=0, state="succeeded")
    a1 = sim("sim-a1", gpu_config="A", replica=1, state="succeeded")
    b0 = sim("sim-b0", gpu_config="B", replica=0, state="succeeded")
    b1 = sim("sim-b1", gpu_config="B", replica=1, state="failed")
    return {s.id: s for s in (a0, a1, b0, b1)}


def test_totals_use_median_of_succeeded_replicas_only():
    sims = _sims_two_configs()
    kernels = kstats(
        {"sim-a0": [100.0, 100.0], "sim-a1": [150.0, 150.0], "sim-b0": [300.0, 300.0], "sim-b1": [1.0]}
    )
    totals = compare.config_totals(["A", "B"], sims, kernels)
    a, b = totals
    assert (a.median_ns, a.low_ns, a.high_ns, a.succeeded) == (250.0, 200.0, 300.0, 2)
    assert (b.median_ns, b.succeeded, b.replicas) == (600.0, 1, 2)
    ranking = compare.rank(totals)
    assert ranking.fastest == ("A",)
    assert ranking.multiples["B"] == pytest.approx(2.4)
    assert ranking.sentence() == "A is fastest. Others: B 2.40x."


def test_configs_within_one_percent_tie():
    totals = [
        compare.ConfigTotal("A", 1000.0, 1000.0, 1000.0, 1, 1),
        compare.ConfigTotal("B", 1009.0, 1009.0, 1009.0, 1, 1),
        compare.ConfigTotal("C", 1011.0, 1011.0, 1011.0, 1, 1),
        compare.ConfigTotal("D", None, None, None, 0, 2),
    ]
    ranking = compare.rank(totals)
    assert ranking.fastest == ("A", "B")
    assert "A and B tie for fastest (within 1%)" in ranking.sentence()
    assert "C 1.01x" in ranking.sentence()
    assert ranking.missing == ("D",)
    assert compare.rank([]).fastest == ()


def test_kernel_rows_median_per_config_and_mape():
    sims = _sims_two_configs()
    kernels = kstats({"sim-a0": [100.0, 50.0], "sim-a1": [200.0], "sim-b0": [300.0]})
    name = kernels[0].kernel_name
    rows = compare.kernel_rows(["A", "B"], sims, kernels, real=[(name, 100.0), (name, 100.0)])
    assert rows[0].sim_ns == {"A": 150.0, "B": 300.0}
    assert rows[1].sim_ns == {"A": 50.0, "B": None}
    err = compare.mape(rows, ["A", "B"])
    assert err["A"] == pytest.approx((50.0 + 50.0) / 2)
    assert err["B"] == pytest.approx(200.0)
    assert compare.mape(compare.kernel_rows(["A"], sims, kernels), ["A"]) == {"A": None}
    # Issue 32: a real time of another kernel, or of no named kernel, is never compared.
    other = compare.kernel_rows(["A"], sims, kernels, real=[("_Z5otherv", 100.0), (None, 100.0)])
    assert [r.sim_kernel_name for r in other] == [name, name]
    assert compare.mape(other, ["A"]) == {"A": None}
    # A real time 1e-9 of the simulated one: an error of at most 1,000,000%, not 10^11.
    tiny = compare.kernel_rows(["A"], sims, kernels, real=[(name, 1e-9)])
    assert compare.mape(tiny, ["A"]) == {"A": pytest.approx(1e6)}


def test_stand_in_detection():
    r = run([sim()])
    assert compare.stand_in_reason(r, r.sims) is None
    done = sim(state="succeeded", kernels_done=6, kernels_total=4)
    assert "finished 6 of the trace's 4 kernels" in compare.stand_in_reason(r, [done])
    assert compare.stand_in_reason(r.model_copy(update={"replay": True}), []) == (
        "the sims replayed a recorded Accel-Sim log"
    )  # the banner says "stand-in" once
    sample = r.model_copy(update={"sample": True, "replay": True})
    assert compare.stand_in_reason(sample, []) is None  # real Accel-Sim output of its own trace
    assert compare.sample_note(sample).startswith("sample run")
    assert compare.sample_note(r) is None
    running_short = sim(state="running", kernels_done=1, kernels_total=4)
    assert compare.stand_in_reason(r, [running_short]) is None


def test_chart_names_fastest_and_demangles():
    sims = _sims_two_configs()
    kernels = [
        kstat("sim-a0", 0, 100.0, name="_Z10dot_kernelIdEvPKT_S2_PS0_i"),
        kstat("sim-b0", 0, 300.0, name="_Z10dot_kernelIdEvPKT_S2_PS0_i"),
    ]
    totals = compare.config_totals(["A", "B"], sims, kernels)
    rows = compare.kernel_rows(["A", "B"], sims, kernels)
    text = chart.plain(
        chart.chart_lines(
            ["A", "B"], rows, totals, compare.rank(totals), compare.mape(rows, ["A", "B"]), False, 80
        )
    )
    # sim-a1 succeeded without finishing a kernel, so A's median total is (0 + 100) / 2.
    assert "A is fastest. Others: B 6.00x." in text
    assert "#0 dot_kernel<double>" in text
    assert "50 ns  fastest" in text


# --- reducer -----------------------------------------------------------------------------------


def test_reducer_applies_snapshot_then_events_and_reports_changes():
    model = RunModel()
    s0, s1 = sim("sim-0", replica=0), sim("sim-1", replica=1, state="launching")
    model.apply(SnapshotEvent(run=run([s0, s1]), kernels=[kstat("sim-0", 0, 10.0)]))
    first = model.take_changes()
    assert first.reset and first.sims == {"sim-0", "sim-1"} and first.kernels
    assert model.state() == "active"

    model.watch("sim-0")
    model.apply(LogEvent(sim_id="sim-0", lines=["a", "b"]))
    model.apply(LogEvent(sim_id="sim-1", lines=["other"]))
    model.apply(KernelEvent(stat=kstat("sim-0", 1, 20.0, stats={"gpu_sim_cycle": 20.0})))
    model.apply(SimEvent(sim=s0.model_copy(update={"state": "succeeded", "kernels_done": 6})))
    model.apply(SimEvent(sim=s1.model_copy(update={"state": "failed", "error": "deadlock"})))
    changes = model.take_changes()
    assert not changes.reset
    assert changes.sims == {"sim-0", "sim-1"}
    assert changes.log_lines == ["a", "b"]
    assert changes.kernels
    assert model.kernels["sim-0"][1].stats == {}  # full stats maps are not kept
    assert model.state() == "partial"
    assert model.summary().sim_counts == {"succeeded": 1, "failed": 1}
    assert model.log_lines_seen["sim-1"] == 1
    assert not model.take_changes().any


def test_reducer_new_snapshot_replaces_everything():
    model = RunModel()
    model.apply(SnapshotEvent(run=run([sim("sim-0")]), kernels=[kstat("sim-0", 0, 1.0)]))
    model.watch("sim-0")
    model.apply(LogEvent(sim_id="sim-0", lines=["old"]))
    model.apply(SnapshotEvent(run=run([sim("sim-0", state="succeeded")]), kernels=[]))
    changes = model.take_changes()
    assert changes.reset and changes.log_lines == []
    assert model.kernels == {} and model.snapshots == 2 and model.state() == "succeeded"


def test_reducer_ignores_sims_of_other_runs_and_unknown_kernels():
    model = RunModel()
    model.apply(SnapshotEvent(run=run([sim("sim-0")]), kernels=[]))
    model.take_changes()
    model.apply(SimEvent(sim=sim("sim-x", run_id="run-other")))
    model.apply(KernelEvent(stat=kstat("sim-x", 0, 1.0)))
    assert "sim-x" not in model.sims and not model.take_changes().any


# --- log lines ---------------------------------------------------------------------------------


def test_line_store_caps_in_blocks_and_counts_dropped():
    store = loglines.LineStore(max_lines=100)
    store.extend(str(i) for i in range(100))
    assert store.extend(["100"]) == 10
    assert len(store) == 91 and store.lines[0] == "10" and store.dropped == 10 and store.total == 101


def test_line_store_search_wraps_both_ways_and_cleans_control_codes():
    store = loglines.LineStore(max_lines=100)
    store.extend(["alpha", "beta\x1b[31m", "gamma", "ALPHA\tx"])
    pat = loglines.compile_search("alpha")
    assert store.find(pat, 0) == 3
    assert store.find(pat, 3) == 0
    assert store.find(pat, 0, backwards=True) == 3
    assert store.count(pat) == 2
    assert "\x1b" not in store.lines[1] and "\t" not in store.lines[3]
    assert loglines.compile_search("Alpha").search("alpha") is None  # smart case
    assert loglines.compile_search("a[").search("xa[y")  # bad regex searched literally


def test_merge_live_skips_chunks_already_in_the_fetched_tail():
    fetched = ["x", "a1", "a2", "b1"]
    assert loglines.merge_live(fetched, [["a1", "a2"], ["b1"], ["c1"]]) == ["c1"]
    assert loglines.merge_live(fetched, [["c1"], ["d1"]]) == ["c1", "d1"]
    assert loglines.merge_live(fetched, []) == []
    assert loglines.merge_live([], [["a"]]) == ["a"]


# --- sim rows ------------------------------------------------------------------------------------


def test_layout_fits_80_columns_and_drops_low_priority_columns():
    lay = simrows.layout(80)  # every column fits an 80-column terminal (time and ETA from ~95)
    assert [c.key for c in lay.columns] == [c.key for c in simrows.COLUMNS if c.priority < simrows.WIDE_ONLY]
    assert sum(lay.widths) + len(lay.widths) <= 80
    narrow = simrows.layout(70)
    keys = [c.key for c in narrow.columns]
    assert {"config", "state", "progress", "kernel"} <= set(keys)
    assert "rate" not in keys
    assert sum(narrow.widths) + len(narrow.widths) <= 70
    wide = simrows.layout(160)
    assert [c.key for c in wide.columns] == [c.key for c in simrows.COLUMNS]
    assert sum(wide.widths) + len(wide.widths) <= 160


def test_config_column_fits_the_longest_config_name_up_to_a_cap():
    names = ["SM75_RTX2060", "SM75_RTX2060_S"]
    lay = simrows.layout(100, simrows.config_width(names))
    config = lay.widths[[c.key for c in lay.columns].index("config")]
    assert config == len("SM75_RTX2060_S")
    assert sum(lay.widths) + len(lay.widths) <= 100
    assert simrows.config_width(["SM7_QV100"]) == len("SM7_QV100")
    assert simrows.config_width([]) == simrows.CONFIG_MIN
    assert simrows.config_width(["X" * 40]) == simrows.CONFIG_MAX
    at80 = simrows.layout(80, simrows.config_width(names))  # the kernel column gives way
    assert at80.widths[0] == 14 and sum(at80.widths) + len(at80.widths) <= 80


def test_config_column_is_headed_variant_in_a_run_with_variants_and_fits_its_title():
    plain = simrows.header_texts(simrows.layout(100, simrows.config_width(["SM7_QV100"])), "config", False)
    assert plain[0].strip() == "config▲"
    width = simrows.config_width(["SM7_V100"], variants=True)
    assert width == len("variant▲")  # the title whole, sort arrow included, over short names
    lay = simrows.layout(100, width, variants=True)
    assert simrows.header_texts(lay, "config", False)[0] == "variant▲"
    assert simrows.header_texts(lay, "state", False)[0] == "variant "


def test_sim_cells_spell_out_state_and_show_error_instead_of_kernel():
    now = T0 + timedelta(seconds=65)
    cells = simrows.sim_cells(sim(), now)
    assert cells["state"].text == "▶ running"
    assert cells["kernel"].text == "dot_kernel<double>"
    assert cells["heartbeat"] == simrows.Cell("1m00s", "stale")
    failed = simrows.sim_cells(sim(state="failed", error="deadlock detected"), now)
    assert failed["kernel"] == simrows.Cell("deadlock detected", "error")
    assert failed["heartbeat"].text == "-"


def test_sorting_keeps_stable_tiebreak_and_state_order():
    sims = [
        sim("s1", gpu_config="B", state="succeeded"),
        sim("s2", gpu_config="A", state="failed"),
        sim("s3", gpu_config="A", replica=1, state="running"),
    ]
    assert simrows.sorted_ids(sims, "config", False, T0) == ["s2", "s3", "s1"]
    assert simrows.sorted_ids(sims, "state", False, T0) == ["s2", "s3", "s1"]
    assert simrows.sorted_ids(sims, "config", True, T0) == ["s1", "s3", "s2"]
    assert simrows.next_sort_key("heartbeat") == "config"


# --- config ------------------------------------------------------------------------------------


def test_settings_precedence_and_private_config_file(tmp_path, monkeypatch):
    monkeypatch.delenv("CASCADE_URL", raising=False)
    monkeypatch.delenv("CASCADE_TOKEN", raising=False)
    cfg = tmp_path / "tui.toml"
    save_config(cfg, "http://127.0.0.1:9999", "s3cret")
    assert stat.S_IMODE(cfg.stat().st_mode) == 0o600
    settings = load_settings(config=cfg)
    assert settings.url == "http://127.0.0.1:9999" and settings.token_value() == "s3cret"
    assert "s3cret" not in repr(settings) and "s3cret" not in str(settings)
    monkeypatch.setenv("CASCADE_URL", "http://127.0.0.1:7000/")
    assert load_settings(config=cfg).url == "http://127.0.0.1:7000"
    assert load_settings(config=cfg, url="http://h:1").url == "http://h:1"

    os.chmod(cfg, 0o644)
    with pytest.raises(ConfigError, match=r"chmod 600"):
        load_settings(config=cfg)
    with pytest.raises(ConfigError, match="url"):
        load_settings(config=tmp_path / "missing.toml", url="ftp://x")


def test_bad_toml_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("url = [")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(config=bad)


def test_finished_sims_show_their_last_kernel_as_last():
    now = T0 + timedelta(seconds=65)
    running = simrows.sim_cells(sim(current_kernel="_Z6kernelv"), now)
    assert running["kernel"].text == "kernel"
    done = simrows.sim_cells(sim(state="succeeded", current_kernel="_Z6kernelv"), now)
    assert done["kernel"].text == "last: kernel"


def test_plural_and_saved_message():
    from pathlib import Path

    assert formatting.plural(1, "sim") == "1 sim"
    assert formatting.plural(2, "sim") == "2 sims"
    assert formatting.plural(0, "file") == "0 files"
    assert formatting.plural(1200, "line") == "1,200 lines"
    home = Path("/home/op")
    one = formatting.saved_message([home / "dl" / "run-1-results.json"], home=home)
    assert one == "run-1-results.json\nin ~/dl"  # the name never wraps mid-way with the path
    many = formatting.saved_message([Path("/srv/x/a.csv"), Path("/srv/x/b.csv")], home=home)
    assert many == "2 files\nin /srv/x"


def test_one_config_names_no_fastest_and_identical_replicas_show_one_value():
    totals = [compare.ConfigTotal("SM90_H100", 118_000.0, 118_000.0, 118_000.0, 2, 2)]
    ranking = compare.rank(totals)
    assert ranking.sentence() == ("Only one config in this run, so there is nothing to compare it with.")
    text = chart.plain(chart.chart_lines(["SM90_H100"], [], totals, ranking, {}, False, 80))
    assert "118 µs..118 µs" not in text and "all 2 replicas agree" in text
    spread = [compare.ConfigTotal("A", 118_000.0, 100_000.0, 130_000.0, 2, 2)]
    assert "100 µs..130 µs" in chart.plain(
        chart.chart_lines(["A"], [], spread, compare.rank(spread), {}, False, 80)
    )


def test_run_progress_counts_succeeded_sims_so_a_cancelled_run_never_looks_done():
    from cascade_tui.views.run_rows import run_progress

    assert run_progress({"cancelled": 2}) == "0/2"
    assert run_progress({"succeeded": 1, "failed": 1}) == "1/2"
    assert run_progress({"succeeded": 2}) == "2/2"


def test_columns_fit_keeps_useful_columns_first_and_gives_spare_width_to_cut_ones():
    from cascade_tui.views.columns import ColumnSpec, fit

    specs = [ColumnSpec("trace", 10, 40, 0), ColumnSpec("size", 8, 9, 2), ColumnSpec("note", 20, 0, 0)]
    rows = [["sample__tinyformer-step-sm70", "1.2 MB", "n: new run (suggested SM7_QV100)"]]
    # Narrow: the note (a failed trace's error) stays, the size goes.
    assert fit(specs, rows, 36) == [10, None, 22]  # spare cells go to the column nearest whole
    # Wide: nothing is cut, the rest goes to the free-text column at the right.
    wide = fit(specs, rows, 120)
    assert wide[0] == len(rows[0][0]) and wide[1] == len("1.2 MB") and wide[2] >= len(rows[0][2])
    assert sum(wide) + 2 * len(wide) == 120


def test_traces_list_keeps_arch_before_note_and_drops_model_first():
    from cascade_tui.screens.traces_list import TracesScreen
    from cascade_tui.views.columns import fit

    titles = [c.title for c in TracesScreen.COLUMNS]
    row = [
        "tinyformer-step-sm70",
        "✔ ready",
        "tinyformer",
        "sm_70",
        "15",
        "1.2 MB",
        "3m",
        "suggested SM7_QV100",
    ]
    for width in (80, 100):
        widths = dict(zip(titles, fit(TracesScreen.COLUMNS, [row], width)))
        assert widths["arch"] is not None and widths["arch"] >= len("sm_70"), (width, widths)
        assert widths["trace"] >= len("tinyformer-step-sm70")
        assert widths["model"] is None or widths["model"] >= len("tinyformer"), (width, widths)
    order = sorted(TracesScreen.COLUMNS, key=lambda c: c.priority)
    assert order[-1].title == "model"


def test_stand_in_chart_names_no_fastest_leaves_the_reason_to_the_banner_and_says_so_far():
    totals = [
        compare.ConfigTotal("SM75_RTX2060", 145_000.0, 145_000.0, 145_000.0, 1, 1),
        compare.ConfigTotal("SM75_RTX2060_S", 100_000.0, 100_000.0, 100_000.0, 1, 1),
    ]
    configs = ["SM75_RTX2060", "SM75_RTX2060_S"]
    reason = "the stand-in simulator ran instead of Accel-Sim"
    lines = chart.chart_lines(
        configs, [], totals, compare.rank(totals), {}, False, 60, reason, finished=False
    )
    text = chart.plain(lines)
    flat = " ".join(text.split())
    assert "No config is named fastest" in flat
    assert "fastest" not in flat.replace("No config is named fastest", "")
    assert "1.45x" not in text and "Others" not in text
    assert "145 µs" in text and "100 µs" in text  # the per-config totals stay
    assert "Total simulated time per config so far" in text
    note = [line for line in text.splitlines() if "fastest" in line or "says why" in line]
    assert note and all(len(line) <= 60 for line in note)  # wrapped, not cut
    assert reason not in flat  # the run screen's banner says it, once
    done = chart.plain(chart.chart_lines(configs, [], totals, compare.rank(totals), {}, False, 100))
    assert "so far" not in done and "SM75_RTX2060_S is fastest" in done


def test_no_succeeded_replica_says_yet_only_while_the_run_is_active():
    totals = [
        compare.ConfigTotal("A", None, None, None, 0, 1),
        compare.ConfigTotal("B", None, None, None, 0, 1),
    ]
    ranking = compare.rank(totals)
    assert "succeeded replica yet" in ranking.sentence(finished=False)
    assert ranking.sentence(finished=True) == (
        "No config has a succeeded replica, so there is no fastest config."
    )
    text = chart.plain(chart.chart_lines(["A", "B"], [], totals, ranking, {}, False, 80, finished=True))
    assert "yet, so" not in text
