"""Issue 22 in the terminal UI: the New run variant editor (a config's options offered as you type,
several variants of one config, errors as notifications) and reading a sweep in the kernels view
(variants side by side as multiples of the unmodified config, total simulated time against the
swept value), with snapshots at 80x24 and 160x45; and the pure logic behind both."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cascade_core.models import ConfigOption, RunEntry, ShardInfo
from cascade_core.variants import VariantError
from cascade_tui.panes.kernels_pane import KernelsPane
from cascade_tui.screens.new_run_plan import total_text
from cascade_tui.screens.run import RunScreen
from cascade_tui.screens.variant_editor import VariantScreen
from cascade_tui.views import chart, compare, sweep, variant_form
from cascade_tui.views.compare import ConfigTotal
from tests.conftest import write_config

from .conftest import UPDATE, create_run, make_app, open_new_run, open_run_screen, play, serve, tinyformer
from .factories import sim
from .helpers import (
    assert_snapshot,
    record_notifications,
    recorded_log,
    screen_text,
    wait_for_app,
    wait_for_text,
)

# SM7_QV100 as `accelsim_dir` (tests/conftest.py) has it, with the options the variant editor offers
QV100 = (Path(__file__).with_name("data") / "SM7_QV100.gpgpusim.config").read_text()


# --- pure: the form's rows ------------------------------------------------------------------------


def rows() -> list[variant_form.FormRow]:
    return [variant_form.FormRow("SM7_QV100", count=1), variant_form.FormRow("SM7_TITANV")]


def test_variants_go_under_their_config_and_make_entries_with_the_apis_label():
    form, first = variant_form.add_variant(rows(), "SM7_QV100", {"gpgpu_n_clusters": "40"})
    form, second = variant_form.add_variant(form, "SM7_QV100", {"-gpgpu_n_clusters": "20"}, "QV100-20SM")
    assert [r.variant for r in form] == [
        "SM7_QV100",
        "SM7_QV100[gpgpu_n_clusters=40]",
        "QV100-20SM",
        "SM7_TITANV",
    ]
    assert first.options == {"-gpgpu_n_clusters": "40"} and first.count == 1
    entries = variant_form.entries_from_rows(form)
    assert [e.model_dump() for e in entries] == [
        {"gpu_config": "SM7_QV100", "count": 1},
        {"gpu_config": "SM7_QV100", "count": 1, "options": {"-gpgpu_n_clusters": "40"}},
        {
            "gpu_config": "SM7_QV100",
            "count": 1,
            "options": {"-gpgpu_n_clusters": "20"},
            "label": "QV100-20SM",
        },
    ]
    assert total_text(entries) == "1 config, 2 variants, 3 sims in total"
    form = variant_form.set_count(form, second.key, 99)
    assert form[2].count == 64  # at most MAX_ENTRY_COUNT
    form = variant_form.remove_variant(form, second.key)
    assert [r.variant for r in form] == ["SM7_QV100", "SM7_QV100[gpgpu_n_clusters=40]", "SM7_TITANV"]
    assert variant_form.remove_variant(form, "SM7_QV100") == form  # a config's own row stays


@pytest.mark.parametrize(
    ("options", "label", "says"),
    [
        ({"-gpgpu_n_clusters": "4 0"}, None, "-gpgpu_n_clusters"),
        ({"-gpgpu_n_clusters": "40;rm"}, None, "-gpgpu_n_clusters"),
        ({"-config": "x"}, None, "set by Cascade"),
        ({}, None, "needs an option"),
        ({"-gpgpu_n_clusters": "40"}, "SM7_TITANV", "another row is labelled"),
        ({"-gpgpu_n_clusters": "40"}, "x" * 81, "label"),
    ],
)
def test_a_variant_the_api_would_refuse_is_refused_with_the_apis_reason(options, label, says):
    with pytest.raises(VariantError, match=re.escape(says)):
        variant_form.add_variant(rows(), "SM7_QV100", options, label)


def test_the_same_options_twice_on_a_config_are_refused_but_on_another_config_are_fine():
    form, _ = variant_form.add_variant(rows(), "SM7_QV100", {"-dram_latency": "200"})
    with pytest.raises(VariantError, match="raise its count"):
        variant_form.add_variant(form, "SM7_QV100", {"dram_latency": "200"})
    form, other = variant_form.add_variant(form, "SM7_TITANV", {"-dram_latency": "200"})
    assert other.variant == "SM7_TITANV[dram_latency=200]"


def test_options_are_offered_as_you_type():
    options = [
        ConfigOption(name=n, value="1", in_config=n != "-gpgpu_n_clusters_extra")
        for n in (
            "-gpgpu_n_clusters",
            "-gpgpu_n_clusters_extra",
            "-dram_latency",
            "-gpgpu_n_cores_per_cluster",
        )
    ]
    assert [o.name for o in variant_form.option_matches(options, "n_clu")] == [
        "-gpgpu_n_clusters",
        "-gpgpu_n_clusters_extra",
    ]
    # Names that start with the text first, however it was typed.
    assert [o.name for o in variant_form.option_matches(options, "-DRAM")] == ["-dram_latency"]
    assert [o.name for o in variant_form.option_matches(options, "cluster")][-1] == "-gpgpu_n_clusters_extra"
    assert variant_form.option_matches(options, "nothing") == []
    names = [o.name for o in options]
    assert variant_form.completion(names, "gpgpu_n_cl") == "gpgpu_n_clusters"
    assert variant_form.completion(names, "-dr") == "-dram_latency"
    assert variant_form.completion(names, "-gpgpu_n_clusters") == "-gpgpu_n_clusters_extra"
    assert variant_form.completion(names, "zzz") is None
    assert variant_form.find_option(options, "dram_latency") is options[2]


# --- pure: reading a sweep ----------------------------------------------------------------------


def entry(
    options: dict[str, str] | None = None, config: str = "SM7_QV100", label: str | None = None
) -> RunEntry:
    return RunEntry(gpu_config=config, count=1, options=options or {}, label=label)


def total(label: str, ns: float | None, partial: bool = False) -> ConfigTotal:
    return ConfigTotal(
        config=label,
        median_ns=ns,
        low_ns=ns,
        high_ns=ns,
        succeeded=0 if partial else 1,
        replicas=1,
        partial=partial,
    )


SWEEP = [
    entry(),
    entry({"-gpgpu_n_clusters": "20"}),
    entry({"-gpgpu_n_clusters": "40"}),
    entry({"-gpgpu_n_clusters": "160"}),
]
TOTALS = [
    total("SM7_QV100", 100.0),
    total("SM7_QV100[gpgpu_n_clusters=20]", 250.0),
    total("SM7_QV100[gpgpu_n_clusters=40]", 150.0),
    total("SM7_QV100[gpgpu_n_clusters=160]", 80.0, True),
]


def test_each_variant_is_a_multiple_of_its_unmodified_config():
    run = sweep.variants(SWEEP)
    assert [v.baseline for v in run] == [None, "SM7_QV100", "SM7_QV100", "SM7_QV100"]
    # A partial total (no succeeded replica) compares nothing.
    assert sweep.baseline_multiples(run, TOTALS) == {
        "SM7_QV100[gpgpu_n_clusters=20]": 2.5,
        "SM7_QV100[gpgpu_n_clusters=40]": 1.5,
    }
    assert sweep.short_names(run) == {
        "SM7_QV100": "SM7_QV100",
        "SM7_QV100[gpgpu_n_clusters=20]": "gpgpu_n_clusters=20",
        "SM7_QV100[gpgpu_n_clusters=40]": "gpgpu_n_clusters=40",
        "SM7_QV100[gpgpu_n_clusters=160]": "gpgpu_n_clusters=160",
    }
    assert sweep.kernel_multiple(run[1], {"SM7_QV100": 2.0, "SM7_QV100[gpgpu_n_clusters=20]": 3.0}) == 1.5
    assert sweep.kernel_multiple(run[0], {"SM7_QV100": 2.0}) is None
    # Without the unmodified config there is no baseline: multiples of the fastest, as before.
    alone = sweep.variants(SWEEP[1:])
    assert all(v.baseline is None for v in alone) and sweep.baseline_multiples(alone, TOTALS) == {}
    assert "multiple of the fastest" in sweep.baseline_note(alone, {})
    assert sweep.sweep_view([entry(), entry(config="SM7_TITANV")], TOTALS) is None  # no variant: as before


def test_fixed_options_are_not_swept_and_typed_labels_stay():
    run = sweep.variants(
        [
            entry({"-dram_latency": "200", "-gpgpu_n_clusters": "20"}),
            entry({"-dram_latency": "200", "-gpgpu_n_clusters": "40"}, label="forty"),
        ]
    )
    assert sweep.swept_options(run) == ["-gpgpu_n_clusters"]
    assert list(sweep.short_names(run).values()) == ["gpgpu_n_clusters=20", "forty"]
    two_configs = sweep.variants(
        [entry({"-dram_latency": "200"}), entry({"-dram_latency": "200"}, "SM7_TITANV")]
    )
    assert list(sweep.short_names(two_configs).values()) == [
        "SM7_QV100 dram_latency=200",
        "SM7_TITANV dram_latency=200",
    ]


def test_sims_and_their_logs_are_named_by_what_their_variant_changes_and_by_shard():
    base = sim("sim-1", gpu_config="SM7_QV100")
    four = sim(
        "sim-2",
        gpu_config="SM7_QV100",
        options={"-gpgpu_n_clusters": "4"},
        label="SM7_QV100[gpgpu_n_clusters=4]",
    )
    shard = sim(
        "sim-3",
        gpu_config="SM7_QV100",
        options={"-gpgpu_n_clusters": "8"},
        label="SM7_QV100[gpgpu_n_clusters=8]",
        replica=1,
        shard=ShardInfo(index=1, count=3, kernel_first=5, kernel_last=9, warmup_kernels=1),
    )
    run = [base, four, shard]
    assert sweep.sim_names(run) == {
        "SM7_QV100": "SM7_QV100",
        "SM7_QV100[gpgpu_n_clusters=4]": "gpgpu_n_clusters=4",
        "SM7_QV100[gpgpu_n_clusters=8]": "gpgpu_n_clusters=8",
    }
    assert sweep.sim_name(four, run) == "gpgpu_n_clusters=4 #0"
    assert sweep.sim_name(shard, run) == "gpgpu_n_clusters=8 #1 shard 2/3"
    assert sweep.sim_name(base, [base]) == "SM7_QV100 #0"


def test_the_chart_series_is_total_time_against_the_swept_value():
    series = sweep.sweep_series(sweep.variants(SWEEP), TOTALS)
    assert series is not None and series.option == "-gpgpu_n_clusters"
    [line] = series.lines
    # 160 has no whole total yet: its point comes once a replica succeeds.
    assert line.points == [(20.0, 250.0), (40.0, 150.0)] and line.baseline_ns == 100.0
    assert series.max_ns == 250.0 and sweep.time_scale(250_000.0) == (1e3, "µs")
    assert sweep.time_scale(12.0) == (1.0, "ns") and sweep.time_scale(3e9) == (1e9, "s")
    # Not a single numeric option: no chart.
    two = [
        entry({"-gpgpu_n_clusters": "20", "-dram_latency": "1"}),
        entry({"-gpgpu_n_clusters": "40", "-dram_latency": "2"}),
    ]
    assert sweep.sweep_series(sweep.variants(two), []) is None
    words = [entry({"-gpgpu_cache:dl1": "N:64:128:6"}), entry({"-gpgpu_cache:dl1": "N:32:128:6"})]
    assert sweep.sweep_series(sweep.variants(words), []) is None
    assert sweep.sweep_series(sweep.variants(SWEEP[:2]), TOTALS) is None  # one value is no sweep


def test_the_kernels_chart_names_variants_by_what_differs_and_compares_them_with_the_base():
    configs = [t.config for t in TOTALS]
    view = sweep.sweep_view(SWEEP, TOTALS)
    text = chart.plain(
        chart.chart_lines(configs, [], TOTALS, compare.rank(TOTALS), {}, False, 100, sweep=view)
    )
    assert "Total simulated time per variant" in text
    assert re.search(r"SM7_QV100 .* 100 ns  base", text)
    assert re.search(r"gpgpu_n_clusters=20 .* 250 ns  2.50x base", text)
    assert "SM7_QV100 is fastest. No succeeded replica: gpgpu_n_clusters=160." in text  # no multiple twice
    assert re.search(r"gpgpu_n_clusters=160 .* partial", text)
    assert "unmodified config (base): SM7_QV100" in text
    plain = chart.plain(chart.chart_lines(configs, [], TOTALS, compare.rank(TOTALS), {}, False, 100))
    assert "per config" in plain and "x base" not in plain  # no sweep view: as before


# --- Pilot: the New run variant editor -------------------------------------------------------------


@pytest.fixture
async def sweep_srv(make_server, accelsim_dir):
    write_config(accelsim_dir, "SM7_QV100", QV100)
    return await serve(make_server, [tinyformer()], accelsim_dir=accelsim_dir)


async def add_variant(pilot, typed: str, value: str, label: str = "") -> None:
    await pilot.press("a")
    await wait_for_app(
        pilot,
        lambda: isinstance(pilot.app.screen, VariantScreen) and bool(pilot.app.screen.options),
        "the variant editor with the config's options",
    )
    await pilot.press(*typed)
    await pilot.press("enter")
    await pilot.press(*value)
    if label:
        await pilot.press("tab", *label)
    await pilot.press("enter")


@pytest.mark.slow
@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_new_run_adds_variants_of_a_config_offering_its_options_as_you_type(sweep_srv, tmp_path, size):
    app = make_app(sweep_srv, tmp_path)
    name = f"{size[0]}x{size[1]}"
    async with app.run_test(size=size) as pilot:
        notes = record_notifications(app)
        screen = await open_new_run(pilot)
        # The footer draws its keys a frame after the screen shows (CI caught it blank once).
        await wait_for_app(
            pilot, lambda: "a Variant" in screen_text(app).splitlines()[-1], "the footer's keys"
        )
        footer = screen_text(app).splitlines()[-1]
        # `x` (drop) is in the help line above the list, so 80 columns keep `? Help` whole.
        assert "a Variant" in footer and "? Help" in footer and "x: drop it" in screen_text(app)

        await pilot.press("a")
        await wait_for_app(
            pilot,
            lambda: isinstance(app.screen, VariantScreen) and bool(app.screen.options),
            "the config's options",
        )
        editor = app.screen
        assert isinstance(editor, VariantScreen)
        await pilot.press(*"n_clu")
        await wait_for_app(
            pilot,
            lambda: [o.name for o in editor.matches] == ["-gpgpu_n_clusters"],
            "the options narrowed to what was typed",
        )
        await wait_for_text(pilot, "-gpgpu_n_clusters: SM7_QV100 has 80")
        await pilot.press("enter")  # takes the highlighted option, then the value
        await pilot.press(*"40")
        await wait_for_text(pilot, "SM7_QV100[gpgpu_n_clusters=40] (the default)")
        assert_snapshot(f"new_run_variant_editor_{name}", screen_text(app), UPDATE)
        await pilot.press("enter")
        await wait_for_app(pilot, lambda: app.screen is screen, "back on New run")
        await wait_for_text(pilot, "+ gpgpu_n_clusters=40")

        # Several variants of one config; the second with a label of its own.
        await add_variant(pilot, "gpgpu_n_clusters", "20", "QV100-20SM")
        await wait_for_text(pilot, "+ gpgpu_n_clusters=20  × 1  QV100-20SM")
        # The same options twice: said, the editor stays with what was typed; Esc leaves it.
        await add_variant(pilot, "-gpgpu_n_clusters", "40")
        await wait_for_app(pilot, lambda: any("raise its count" in n for n in notes()), "the refusal")
        assert isinstance(app.screen, VariantScreen)
        await pilot.press("escape")
        # A value that is not one token, an option the config does not have: said, never a crash.
        await wait_for_app(pilot, lambda: app.screen is screen, "back on New run")
        await add_variant(pilot, "-dram_latency", "4 0")
        await wait_for_app(
            pilot,
            lambda: any("-dram_latency" in n and "one token" in n for n in notes()),
            "the bad value said",
        )
        await pilot.press("escape")
        await add_variant(pilot, "-no_such_option", "1")
        await wait_for_app(
            pilot, lambda: any("no option -no_such_option" in n for n in notes()), "the bad name said"
        )
        await pilot.press("escape")
        await wait_for_app(pilot, lambda: app.screen is screen, "back on New run")
        await wait_for_text(pilot, "1 config, 2 variants, 3 sims in total")
        assert [r.variant for r in screen.rows] == [
            "SM7_QV100",
            "SM7_QV100[gpgpu_n_clusters=40]",
            "QV100-20SM",
            "SM7_TITANV",
        ]
        assert_snapshot(f"new_run_variants_{name}", screen_text(app), UPDATE)
        assert app.errors == []

        await pilot.press("enter")
        await wait_for_app(pilot, lambda: isinstance(app.screen, RunScreen), "the new run")
        async with sweep_srv.client() as http:
            [run] = (await http.get("/api/runs")).json()
            detail = (await http.get(f"/api/runs/{run['id']}")).json()
        assert [(e.get("label"), e.get("options")) for e in detail["entries"]] == [
            (None, None),
            ("SM7_QV100[gpgpu_n_clusters=40]", {"-gpgpu_n_clusters": "40"}),
            ("QV100-20SM", {"-gpgpu_n_clusters": "20"}),
        ]
        assert sorted(s["label"] for s in detail["sims"]) == [
            "QV100-20SM",
            "SM7_QV100",
            "SM7_QV100[gpgpu_n_clusters=40]",
        ]


@pytest.mark.slow
async def test_new_run_variant_keys_are_in_help_and_the_command_palette_and_x_drops_a_variant(
    sweep_srv, tmp_path
):
    app = make_app(sweep_srv, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_new_run(pilot)
        await pilot.press("question_mark")
        text = await wait_for_text(pilot, "new_run.add_variant")
        assert "new_run.remove_variant" in text
        await pilot.press("escape")
        commands = [c.help for c in app.get_system_commands(screen)]
        assert any("new_run.add_variant" in c for c in commands)
        assert any("new_run.remove_variant" in c for c in commands)

        await pilot.press("x")  # on a config: said, nothing removed
        await wait_for_app(pilot, lambda: len(screen.rows) == 2, "the rows unchanged")
        await add_variant(pilot, "dram_lat", "400")
        await wait_for_text(pilot, "+ dram_latency=400")
        assert screen.rows[1].options == {"-dram_latency": "400"}
        await pilot.press("x")
        await wait_for_app(pilot, lambda: len(screen.rows) == 2, "the variant dropped")
        assert app.errors == []


@pytest.mark.slow
async def test_the_servers_422_on_launch_is_a_notification_and_the_form_stays(make_server, tmp_path):
    # No simulator: the stand-in would replay, and it cannot honour options (the server says so).
    server = await serve(make_server, [tinyformer()], launcher="local", local_slots=1)
    app = make_app(server, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_new_run(pilot)
        await wait_for_text(pilot, "Simulator: the stand-in")
        await add_variant(pilot, "gpgpu_n_clusters", "40")
        await wait_for_text(pilot, "+ gpgpu_n_clusters=40")
        # Said while the form is built, before any launch: the stand-in cannot run variants.
        await wait_for_text(pilot, "Variants need the real Accel-Sim")
        await pilot.press("enter")
        await wait_for_app(
            pilot, lambda: any("422" in e and "stand-in" in e for e in app.errors), "the 422 said"
        )
        assert app.screen is screen and not screen.launching
        await wait_for_text(pilot, "1 config, 1 variant, 2 sims in total")
        async with server.client() as http:
            assert (await http.get("/api/runs")).json() == []


# --- Pilot: reading a sweep -----------------------------------------------------------------------


def scaled_log(factor: float) -> list[str]:
    """The recorded QV100 log with every cycle count scaled: a variant that runs `factor` times as long."""

    def scale(match: re.Match[str]) -> str:
        return f"{match.group(1)}{round(int(match.group(2)) * factor)}"

    return [re.sub(r"^(gpu_(?:tot_)?sim_cycle = )(\d+)", scale, line) for line in recorded_log("SM7_QV100")]


async def finished_sweep_run(srv) -> dict:
    """A run of SM7_QV100 and three -gpgpu_n_clusters variants, each sim played to the end with
    the recorded log's cycles scaled (20 clusters 2x, 40 1.5x, 160 0.8x)."""
    async with srv.client() as http:
        variants = [("SM7_QV100", 1, {"-gpgpu_n_clusters": n}) for n in ("20", "40", "160")]
        run = await create_run(http, [("SM7_QV100", 1), *variants])
        factors = {
            "SM7_QV100": 1.0,
            "SM7_QV100[gpgpu_n_clusters=20]": 2.0,
            "SM7_QV100[gpgpu_n_clusters=40]": 1.5,
            "SM7_QV100[gpgpu_n_clusters=160]": 0.8,
        }
        for sim in run["sims"]:
            await play(http, sim["id"], scaled_log(factors[sim["label"]]))
    return run


@pytest.mark.slow
@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_the_kernels_view_of_a_sweep_puts_variants_side_by_side_with_a_chart(sweep_srv, tmp_path, size):
    run = await finished_sweep_run(sweep_srv)
    app = make_app(sweep_srv, tmp_path)
    async with app.run_test(size=size) as pilot:
        screen = await open_run_screen(pilot, run["id"])
        await wait_for_app(pilot, lambda: screen.model.is_finished(), "the finished run")
        await pilot.press("k")
        await wait_for_text(pilot, "2.00x base")
        pane = screen.query_one(KernelsPane)
        await wait_for_app(pilot, lambda: pane.series is not None, "the sweep chart")
        assert pane.series is not None and pane.series.option == "-gpgpu_n_clusters"
        [line] = pane.series.lines
        assert [x for x, _ in line.points] == [20.0, 40.0, 160.0] and line.baseline_ns
        ratios = [ns / line.baseline_ns for _, ns in line.points]
        assert ratios == pytest.approx([2.0, 1.5, 0.8], rel=1e-3)
        if size == (80, 24):  # no room for the chart under the bars: the pane says how to see it
            await wait_for_text(pilot, "Tab: sims · z: chart")
            await pilot.press("z")
        await wait_for_text(pilot, "total simulated time (µs) vs gpgpu_n_clusters")
        if size != (80, 24):  # the sims table above (zoomed out of view at 80x24) has its rows
            await wait_for_text(pilot, "gpgpu_n_clusters=160  0 ✔ succeeded")
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()  # the plot laid out beside the bars, drawn at its final size
        text = screen_text(app)
        for want in (
            "Total simulated time per variant",
            "gpgpu_n_clusters=20",
            "1.50x base",
            "0.80x base",
            "gpgpu_n_clusters=160 is fastest.",
        ):
            assert want in text, want
        assert_snapshot(f"kernels_sweep_{size[0]}x{size[1]}", text, UPDATE)
        assert app.errors == []


@pytest.mark.slow
async def test_the_sweep_chart_moves_beside_the_bars_when_the_terminal_widens_and_back(sweep_srv, tmp_path):
    run = await finished_sweep_run(sweep_srv)
    app = make_app(sweep_srv, tmp_path)
    async with app.run_test(size=(100, 45)) as pilot:
        screen = await open_run_screen(pilot, run["id"])
        await wait_for_app(pilot, lambda: screen.model.is_finished(), "the finished run")
        await pilot.press("k")
        pane = screen.query_one(KernelsPane)
        plot = pane.query_one("#sweep-plot")
        await wait_for_app(pilot, lambda: pane.series is not None and plot.display, "the sweep chart")
        assert not pane.has_class("-side-plot")  # 100 columns: under the bars
        bars = pane.chart

        def bars_fit() -> bool:  # the lines are built to the bars' own width, never cut
            width = bars.scrollable_content_region.width
            return bool(bars.lines) and all(sum(len(t) for t, _ in line) <= width for line in bars.lines)

        await wait_for_app(pilot, bars_fit, "the bars built to their width")
        await pilot.resize_terminal(160, 45)
        await wait_for_app(pilot, lambda: pane.has_class("-side-plot"), "the chart beside the bars")
        await wait_for_app(pilot, lambda: plot.region.x > 0, "the chart laid out right of the bars")
        await wait_for_app(pilot, bars_fit, "the bars built again to the narrower column")
        # The bars narrow while the pane keeps its size (a layout change inside it, as when the
        # chart first moves beside them): they are built again all the same.
        wide = bars.scrollable_content_region.width
        pane.styles.grid_columns = "1fr 60%"
        await wait_for_app(pilot, lambda: bars.scrollable_content_region.width < wide, "the bars narrowed")
        await wait_for_app(pilot, bars_fit, "the bars built again to their own narrower width")
        await pilot.resize_terminal(100, 45)
        await wait_for_app(pilot, lambda: not pane.has_class("-side-plot"), "the chart under the bars again")
        assert plot.display
        await wait_for_app(pilot, bars_fit, "the bars built to the whole width again")
