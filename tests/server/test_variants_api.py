"""Issue 22: config variants on POST /api/runs (validation, labels, where they show) and
GET /api/accuracy against a hand computation from /comparison."""

from __future__ import annotations

import asyncio
import json
import math
import re
import statistics

import httpx
import pytest

from cascade_tui.scripting import accuracy_command, run_command
from tests.conftest import TOKEN, ready_trace, write_config
from tests.helpers import post_run, recorded_log, store_real_timing, wait_until
from tests.timeline.profiles import import_sampled_timing

QV100 = (
    "# Volta\n-gpgpu_compute_capability_major 7\n-gpgpu_compute_capability_minor 0\n"
    "-gpgpu_clock_domains 1132.0:1132.0:1132.0:850.0\n-gpgpu_n_clusters 80\n-dram_latency 100 # a comment\n"
)


@pytest.fixture
async def variants(make_server, accelsim_dir):
    write_config(accelsim_dir, "SM7_QV100", QV100)
    server = await make_server(accelsim_dir=accelsim_dir)
    await server.store.traces.put_trace(ready_trace())
    return server


def qv100(count: int = 1, **extra) -> dict:
    return {"gpu_config": "SM7_QV100", "count": count, **extra}


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"-gpgpu_no_such_option": "1"}, "-gpgpu_no_such_option"),
        ({"-gpgpu_n_clusters": "4 0"}, "-gpgpu_n_clusters"),
        ({"-gpgpu_n_clusters": "40;rm"}, "-gpgpu_n_clusters"),
        ({"-gpgpu_n_clusters": "$(id)"}, "-gpgpu_n_clusters"),
        ({"-config": "x"}, "-config"),
        ({"-gpgpu_n_clusters": ""}, "-gpgpu_n_clusters"),
        ({"-gpgpu_n_clusters": "40\n"}, "-gpgpu_n_clusters"),  # `$` matched before a newline
        ({"-gpgpu_n_clusters": "inf"}, "-gpgpu_n_clusters"),
        ({"-gpgpu_n_clusters": "-Infinity"}, "-gpgpu_n_clusters"),
        ({"-gpgpu_n_clusters": "nan"}, "-gpgpu_n_clusters"),
    ],
)
async def test_bad_options_are_a_422_naming_the_option(variants, options, named):
    async with variants.client() as http:
        resp = await post_run(http, [qv100(options=options)])
    assert resp.status_code == 422, resp.text
    assert isinstance(resp.json()["detail"], str) and named in resp.json()["detail"]


@pytest.mark.parametrize(
    "option",
    [
        "-ptx_line_stats_filename",
        "-hw_perf_file_name",
        "-inter_config_file",
        "-gpgpu_ptx_inst_debug_file",
        "-gpgpu_n_clusters",
    ],
)
@pytest.mark.parametrize("value", ["/tmp/x", "../x", "a/b", "..\\x", "C:\\x", "/"])
async def test_a_value_is_never_a_path(variants, option, value):
    """A file-name option can only name a file in the sim's own working directory: the simulator
    wrote `-ptx_line_stats_filename /abs/path` outside its scratch directory."""
    write_config(variants.settings.configs_root, "SM7_QV100", QV100 + f"{option} x\n")
    async with variants.client() as http:
        resp = await post_run(http, [qv100(options={option: value})])
        assert resp.status_code == 422, resp.text
        detail = resp.json()["detail"]
        assert option in detail and "without paths" in detail
        assert (await http.get("/api/runs")).json() == []
        ok = await post_run(http, [qv100(options={option: "stats.txt"})])
        assert ok.status_code == 201, ok.text


@pytest.mark.parametrize("literal", ["1e400", "-1e400", "NaN", "Infinity"])
async def test_a_number_that_is_not_finite_is_refused_naming_the_option(variants, literal):
    """JSON numbers are values ({"-x": 40} is "40"), but 1e400 read as inf, or a NaN literal, is no
    value the simulator can take."""
    body = (
        '{"trace_id": "tinyformer-step-sm70", "entries": [{"gpu_config": "SM7_QV100", '
        f'"count": 1, "options": {{"-gpgpu_n_clusters": {literal}}}}}]}}'
    )
    async with variants.client() as http:
        resp = await http.post("/api/runs", content=body, headers={"Content-Type": "application/json"})
        assert resp.status_code == 422, resp.text
        assert "-gpgpu_n_clusters" in resp.json()["detail"] and "finite" in resp.json()["detail"]
        assert (await http.get("/api/runs")).json() == []


@pytest.mark.parametrize("value", ["/abs/path", "a\\b", "40\n", "inf", "NaN", "1e999"])
def test_the_worker_takes_the_same_rule(value):
    from cascade_core.variants import VariantError, normalize_options

    with pytest.raises(VariantError, match="-gpgpu_n_clusters"):
        normalize_options({"-gpgpu_n_clusters": value})
    assert normalize_options({"gpgpu_n_clusters": "40"}) == {"-gpgpu_n_clusters": "40"}


async def test_same_config_twice_needs_different_options(variants):
    async with variants.client() as http:
        same = await post_run(
            http, [qv100(options={"-gpgpu_n_clusters": "40"}), qv100(options={"gpgpu_n_clusters": 40})]
        )
        assert same.status_code == 422 and "same options" in same.json()["detail"]
        plain = await post_run(http, [qv100(), qv100()])
        assert plain.status_code == 422 and "raise its count" in plain.json()["detail"]
        clash = await post_run(http, [qv100(label="x"), qv100(options={"-dram_latency": "200"}, label="x")])
        assert clash.status_code == 422 and "same label" in clash.json()["detail"]
        bad_label = await post_run(http, [qv100(options={"-dram_latency": "200"}, label=" x")])
        assert bad_label.status_code == 422 and "label" in bad_label.json()["detail"]

        resp = await post_run(
            http,
            [
                qv100(2),
                qv100(options={"-gpgpu_n_clusters": "40", "-dram_latency": "400"}),
                qv100(options={"-gpgpu_n_clusters": "20"}, label="QV100-20SM"),
            ],
        )
        assert resp.status_code == 201, resp.text
        run = resp.json()
        assert run["entries"] == [
            {"gpu_config": "SM7_QV100", "count": 2},
            {
                "gpu_config": "SM7_QV100",
                "count": 1,
                "options": {"-dram_latency": "400", "-gpgpu_n_clusters": "40"},
                "label": "SM7_QV100[dram_latency=400,gpgpu_n_clusters=40]",
            },
            {
                "gpu_config": "SM7_QV100",
                "count": 1,
                "options": {"-gpgpu_n_clusters": "20"},
                "label": "QV100-20SM",
            },
        ]
        assert [(s["label"], s["replica"], s["options"]) for s in run["sims"]] == [
            ("SM7_QV100", 0, {}),
            ("SM7_QV100", 1, {}),
            ("QV100-20SM", 0, {"-gpgpu_n_clusters": "20"}),
            (
                "SM7_QV100[dram_latency=400,gpgpu_n_clusters=40]",
                0,
                {"-dram_latency": "400", "-gpgpu_n_clusters": "40"},
            ),
        ]
        comparison = (await http.get(f"/api/runs/{run['id']}/comparison")).json()
        assert comparison["configs"] == [
            "SM7_QV100",
            "SM7_QV100[dram_latency=400,gpgpu_n_clusters=40]",
            "QV100-20SM",
        ]
        perfetto = (await http.get(f"/api/runs/{run['id']}/perfetto")).json()["traceEvents"]
        names = [e["args"]["name"] for e in perfetto if e.get("name") == "process_name"]
        assert names == comparison["configs"]
        # Rerun keeps the variants; retry makes one sim per failed sim of each variant.
        for sim in run["sims"][1:3]:
            await http.post(f"/api/sims/{sim['id']}/heartbeat", json={"state": "failed", "exit_code": 1})
        await http.post(f"/api/runs/{run['id']}/cancel")
        retried = (await http.post(f"/api/runs/{run['id']}/retry")).json()
        assert [
            (e["label"] if "label" in e else e["gpu_config"], e["count"]) for e in retried["entries"]
        ] == [("SM7_QV100", 1), ("QV100-20SM", 1)]
        again = (await http.post(f"/api/runs/{run['id']}/rerun")).json()
        assert again["entries"] == run["entries"]


async def test_a_clock_option_changes_the_variants_time_base(variants):
    async with variants.client() as http:
        run = (
            await post_run(http, [qv100(options={"-gpgpu_clock_domains": "566.0:566.0:566.0:850.0"})])
        ).json()
        sim = run["sims"][0]
        await http.post(
            f"/api/sims/{sim['id']}/logs",
            json={"seq": 0, "lines": recorded_log("SM7_QV100")},
        )
        kernels = (await http.get(f"/api/runs/{run['id']}/kernels")).json()
    assert kernels and kernels[0]["sim_time_ns"] == pytest.approx(kernels[0]["gpu_sim_cycle"] / 566.0 * 1000)


async def test_the_stand_in_refuses_options(make_server, accelsim_dir):
    write_config(accelsim_dir, "SM7_QV100", QV100)
    server = await make_server(launcher="local", local_slots=1)  # no simulator: the stand-in
    await server.store.traces.put_trace(ready_trace())
    async with server.client() as http:
        resp = await post_run(http, [qv100(options={"-gpgpu_n_clusters": "40"})])
        assert resp.status_code == 422 and "stand-in" in resp.json()["detail"], resp.text
        assert (await http.get("/api/runs")).json() == []


async def test_a_configs_options_are_listed(variants):
    async with variants.client() as http:
        options = (await http.get("/api/gpu-configs/SM7_QV100/options")).json()
        assert {"name": "-gpgpu_n_clusters", "value": "80", "description": "", "in_config": True} in options
        assert {"name": "-dram_latency", "value": "100", "description": "", "in_config": True} in options
        assert (await http.get("/api/gpu-configs/NOPE/options")).status_code == 404


# --- accuracy ---------------------------------------------------------------------------------


async def finish(http: httpx.AsyncClient, sim_id: str, lines: list[str]) -> None:
    assert (await http.post(f"/api/sims/{sim_id}/logs", json={"seq": 0, "lines": lines})).status_code == 204
    await http.post(f"/api/sims/{sim_id}/heartbeat", json={"state": "succeeded", "exit_code": 0})


def scaled(lines: list[str], factor: int) -> list[str]:
    """The recorded log with every kernel's cycles multiplied: another variant's numbers."""
    out = []
    for line in lines:
        if line.startswith("gpu_sim_cycle = "):
            line = f"gpu_sim_cycle = {int(line.split('=')[1]) * factor}"
        out.append(line)
    return out


def named_as(log: list[str], names: list[str]) -> list[str]:
    """The log with its kernels' `kernel_name` lines naming `names`, in order."""
    it = iter(names)
    return [f"kernel_name = {next(it)}" if line.startswith("kernel_name = ") else line for line in log]


async def test_accuracy_equals_a_hand_computation_from_the_comparison(variants, capsys):
    import_sampled_timing(variants.settings.traces_dir / "profiled")
    real = json.loads((variants.settings.traces_dir / "profiled" / "real_timing.json").read_text())
    trace = ready_trace("profiled", metadata=None)
    names = [kernel.name for kernel in trace.kernels]
    for kernel, name in zip(real["kernels"], names):  # the trace's kernels as Accel-Sim names them
        kernel["kernel_name"] = name
    assert (await store_real_timing(variants.store, trace, real)).has_real_timing
    # The sims ran the trace's kernels (accuracy pairs a kernel's times only under one name).
    log = named_as(recorded_log("SM7_QV100"), names)
    async with variants.client() as http:
        run = (
            await post_run(http, [qv100(2), qv100(options={"-gpgpu_n_clusters": "40"})], "profiled")
        ).json()
        plain = [s for s in run["sims"] if not s["options"]]
        variant = next(s for s in run["sims"] if s["options"])
        await finish(http, plain[0]["id"], log)
        await finish(http, plain[1]["id"], scaled(log, 3))
        await finish(http, variant["id"], scaled(log, 2))
        # a run on the trace without real timing: no row
        other = (await post_run(http, [qv100()])).json()
        await finish(http, other["sims"][0]["id"], log)

        async def done():
            got = (await http.get(f"/api/runs/{run['id']}")).json()
            return got if got["state"] == "succeeded" else None

        await wait_until(done, 30)
        comparison = (await http.get(f"/api/runs/{run['id']}/comparison")).json()
        rows = (await http.get("/api/accuracy")).json()
        assert {r["trace_id"] for r in rows} == {"profiled"}
        assert [r["label"] for r in rows] == ["SM7_QV100", "SM7_QV100[gpgpu_n_clusters=40]"]
        for row in rows:
            pairs = [
                (c["real_ns"], c["sim_ns"][row["label"]])
                for c in comparison["rows"]
                if c["real_ns"] and c["sim_ns"][row["label"]] is not None
            ]
            errors = [(s - r) / r * 100 for r, s in pairs]
            assert row["kernels"] == len(pairs) == 15 and row["sims"] == (
                2 if row["label"] == "SM7_QV100" else 1
            )
            assert row["mape_pct"] == pytest.approx(statistics.fmean(abs(e) for e in errors))
            assert row["mean_error_pct"] == pytest.approx(statistics.fmean(errors))
            logs = [(math.log10(r), math.log10(s)) for r, s in pairs]
            assert row["pearson_r"] == pytest.approx(statistics.correlation(*zip(*logs)))
            assert len(row["worst"]) == 5
            assert abs(row["worst"][0]["error_pct"]) == pytest.approx(max(abs(e) for e in errors))
            assert row["points"] is None
        filtered = (
            await http.get(
                "/api/accuracy", params={"config": "SM7_QV100[gpgpu_n_clusters=40]", "points": "true"}
            )
        ).json()
        assert len(filtered) == 1 and len(filtered[0]["points"]) == 15
        assert (await http.get("/api/accuracy", params={"trace": "tinyformer-step-sm70"})).json() == []

    # `cascade accuracy --format json` prints exactly the API's list; the table names both variants.
    connection = ["--url", variants.url, "--token", TOKEN]
    assert await asyncio.to_thread(accuracy_command.main, [*connection, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == rows
    # --config takes a config (every variant of it) or one variant's label
    assert (
        await asyncio.to_thread(accuracy_command.main, [*connection, "--config", "SM7_QV100", "--worst"]) == 0
    )
    table = capsys.readouterr().out
    assert "SM7_QV100[gpgpu_n_clusters=40]" in table and "worst kernels" in table
    assert "\\n" not in table  # the worst kernels one per line, not an escaped block
    lines = table.splitlines()
    worst = lines[
        next(n for n, line in enumerate(lines) if line.endswith(" on SM7_QV100, worst kernels:")) + 1
    ]
    assert re.match(r"\s+[+-][0-9.]+%\s", worst), worst
    assert f"{rows[0]['mape_pct']:.1f}%" in table and f"{rows[1]['pearson_r']:.3f}" in table
    assert (
        await asyncio.to_thread(
            accuracy_command.main,
            [*connection, "--config", "SM7_QV100[gpgpu_n_clusters=40]", "--format", "csv"],
        )
        == 0
    )
    assert len(capsys.readouterr().out.strip().splitlines()) == 2


async def test_run_start_sweep_makes_one_entry_per_value_and_their_cross_product(variants, capsys):
    connection = ["--url", variants.url, "--token", TOKEN]
    argv = [
        "start",
        "--trace",
        "tinyformer-step-sm70",
        "--config",
        "SM7_QV100x2",
        "--sweep",
        "-gpgpu_n_clusters=20,40",
        "--sweep",
        "dram_latency=100,200",
        "--baseline",
        *connection,
    ]
    assert await asyncio.to_thread(run_command.main, argv) == 0
    run_id = capsys.readouterr().out.strip()
    async with variants.client() as http:
        run = (await http.get(f"/api/runs/{run_id}")).json()
    assert [(e.get("options", {}), e["count"]) for e in run["entries"]] == [
        ({}, 2),
        ({"-dram_latency": "100", "-gpgpu_n_clusters": "20"}, 2),
        ({"-dram_latency": "200", "-gpgpu_n_clusters": "20"}, 2),
        ({"-dram_latency": "100", "-gpgpu_n_clusters": "40"}, 2),
        ({"-dram_latency": "200", "-gpgpu_n_clusters": "40"}, 2),
    ]
    assert len({s["label"] for s in run["sims"]}) == 5 and len(run["sims"]) == 10
    bad = [
        "start",
        "--trace",
        "tinyformer-step-sm70",
        "--config",
        "SM7_QV100",
        "--sweep",
        "-gpgpu_n_clusters=1;2",
        *connection,
    ]
    assert await asyncio.to_thread(run_command.main, bad) == 3
    assert "-gpgpu_n_clusters" in capsys.readouterr().err
    # An option given twice, or both swept and fixed, would lose a value without a word: refused.
    start = ["start", "--trace", "tinyformer-step-sm70", "--config", "SM7_QV100", *connection]
    twice = [*start, "--option", "gpgpu_n_clusters=1", "--option", "-gpgpu_n_clusters=2"]
    assert await asyncio.to_thread(run_command.main, twice) == 2
    assert "--option -gpgpu_n_clusters is given twice ('1' and '2')" in capsys.readouterr().err
    both = [*start, "--option", "gpgpu_n_clusters=1", "--sweep", "gpgpu_n_clusters=2,4"]
    assert await asyncio.to_thread(run_command.main, both) == 2
    assert "-gpgpu_n_clusters is both swept (--sweep) and fixed (--option)" in capsys.readouterr().err


# --- a 422 never repeats oversized input in full ------------------------------------------------


@pytest.mark.parametrize(
    "entry",
    [
        qv100(options={"-gpgpu_n_clusters": "40"}, label="L" * 100_000),
        qv100(options={"-gpgpu_n_clusters": "40"}, label="\n" * 100_000),
        qv100(options={"-" + "x" * 3000: "40"}),
        qv100(options={"-gpgpu_" + "n" * 3000: "40"}),  # a valid name no config knows
        qv100(options={"-gpgpu_n_clusters": "4" * 3000}),
        qv100(options={"-gpgpu_n_clusters": "/" * 3000}),
        qv100(options={"-gpgpu_n_clusters": "4 " * 3000}),
        qv100(options={"-config": "x" * 3000}),
        {"gpu_config": "X" * 100_000, "count": 1},
        qv100(options={"-" + "x" * 3000: ["not", "text"]}),  # a list in the body's error path
    ],
)
async def test_a_422_quotes_long_input_cut_with_its_length(variants, entry):
    async with variants.client() as http:
        resp = await post_run(http, [entry])
    assert resp.status_code == 422, resp.text
    assert len(resp.content) < 1000, resp.text[:2000]
    detail = resp.json()["detail"]
    if isinstance(detail, str):
        assert "characters)" in detail or "entry 0" in detail


async def test_two_long_labels_that_clash_are_cut_too(variants):
    async with variants.client() as http:
        same = "L" * 70
        resp = await post_run(
            http,
            [
                qv100(options={"-gpgpu_n_clusters": "40"}, label=same),
                qv100(options={"-gpgpu_n_clusters": "20"}, label=same),
            ],
        )
    assert resp.status_code == 422 and "same label" in resp.json()["detail"]
    assert "(70 characters)" in resp.json()["detail"]


def test_quoted_cuts_only_long_text():
    from cascade_core.quoting import QUOTE_LIMIT, quoted

    assert quoted("SM7_QV100") == "'SM7_QV100'"
    assert quoted("a" * QUOTE_LIMIT) == repr("a" * QUOTE_LIMIT)
    long = quoted("a" * 100_000)
    assert long == f"{'a' * QUOTE_LIMIT!r}… (100,000 characters)"
    assert quoted(["x"] * 1000).endswith("characters)")


# --- a run's own entries always create again ------------------------------------------------------

LONG_OPTIONS = [
    {"-gpgpu_clock_domains": "1132.0:1132.0:1132.0:850.0", "-dram_latency": "400", "-gpgpu_n_clusters": "40"},
    {"-gpgpu_clock_domains": "1000.00000000:1000.00000000:1000.00000000:850.00000000"},
]


@pytest.mark.parametrize("options", LONG_OPTIONS)
async def test_rerun_and_retry_keep_a_long_automatic_label(variants, options):
    async with variants.client() as http:
        resp = await post_run(http, [qv100(2, options=options), qv100()])
        assert resp.status_code == 201, resp.text
        run = resp.json()
        label = run["entries"][0]["label"]
        assert len(label) > 80 and label.isprintable()
        again = await http.post(f"/api/runs/{run['id']}/rerun")
        assert again.status_code == 201, again.text
        assert again.json()["entries"] == run["entries"]
        failed = next(s for s in run["sims"] if s["label"] == label)
        await http.post(f"/api/sims/{failed['id']}/heartbeat", json={"state": "failed", "exit_code": 1})
        await http.post(f"/api/runs/{run['id']}/cancel")
        retried = await http.post(f"/api/runs/{run['id']}/retry")
        assert retried.status_code == 201, retried.text
        assert retried.json()["entries"] == [{**run["entries"][0], "count": 1}]
        assert [s["label"] for s in retried.json()["sims"]] == [label]
        # a label a user gives still follows the rules, however long the automatic one may be
        user = await post_run(http, [qv100(options=options, label=label + "x")])
        assert user.status_code == 422 and "label" in user.json()["detail"]


def test_an_automatic_label_is_printable_for_every_accepted_value():
    from cascade_core.variants import VariantError, default_label, normalize_options

    for code in [*range(0x800), 0x2028, 0x2029, 0xFEFF, 0x1F600, 0x10FFFF]:  # every ASCII, others
        value = f"4{chr(code)}0"
        try:
            options = normalize_options({"-gpgpu_n_clusters": value})
        except VariantError:
            continue
        assert default_label("SM7_QV100", options).isprintable(), repr(value)


# --- the options list offers only options a run may give -------------------------------------------


async def test_the_options_list_leaves_out_every_option_a_run_refuses(variants, monkeypatch, tmp_path):
    from cascade_core.config_probe import ConfigFiles
    from cascade_core.variants import RESERVED_OPTIONS, OptionInfo
    from cascade_server.services import variant_check

    # from the config files (no simulator that runs)
    write_config(
        variants.settings.configs_root, "SM7_QV100", QV100 + "-trace ./x/kernelslist.g\n-config ./a\n"
    )
    async with variants.client() as http:
        names = {o["name"] for o in (await http.get("/api/gpu-configs/SM7_QV100/options")).json()}
    assert "-gpgpu_n_clusters" in names and not names & RESERVED_OPTIONS

    # from the simulator's echo: -trace is the probe's temporary path there
    echo = {
        name: OptionInfo(name, value)
        for name, value in {
            "-trace": str(tmp_path / "no-such-trace/kernelslist.g"),
            "-config": "./gpgpusim.config",
            "-gpgpu_n_clusters": "80",
            "-" + "x" * 200: "1",  # longer than an option name may be
        }.items()
    }
    monkeypatch.setattr(variant_check, "probe", lambda accelsim, config: echo)
    catalog = variant_check.OptionCatalog()
    binary = tmp_path / "sim" / variant_check.ACCELSIM_BINARY
    binary.parent.mkdir(parents=True)
    binary.write_text("")
    config = ConfigFiles.in_simulator(variants.settings.configs_root, "SM7_QV100")
    listed = await catalog.options(config, tmp_path / "sim")
    assert [o.name for o in listed] == ["-gpgpu_n_clusters"]


# --- the size of a run ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entries", "figures"),
    [
        ([qv100(options={"-dram_latency": str(n)}) for n in range(257)], ["256", "257"]),
        ([qv100(options={"-dram_latency": str(n)}) for n in range(10_000)], ["256", "10,000"]),
        ([qv100(64, shards=64), qv100(1, options={"-dram_latency": "1"})], ["4,096", "4,097"]),
        ([qv100(64, shards=15, options={"-dram_latency": str(n)}) for n in range(100)], ["4,096", "96,000"]),
    ],
)
async def test_a_run_too_large_is_a_422_before_anything_is_stored(variants, entries, figures):
    async with variants.client() as http:
        resp = await post_run(http, entries)
        assert resp.status_code == 422, resp.text[:300]
        detail = resp.json()["detail"]
        assert isinstance(detail, str) and all(figure in detail for figure in figures), detail
        assert (await http.get("/api/runs")).json() == []


def test_the_run_size_limits_are_inclusive():
    from cascade_core.models import MAX_RUN_ENTRIES, MAX_RUN_SIMS, RunEntry, run_size_problem

    def entries(n: int, count: int = 1, shards: int = 1) -> list[RunEntry]:
        return [RunEntry.model_construct(gpu_config="X", count=count, shards=shards) for _ in range(n)]

    assert run_size_problem(entries(MAX_RUN_ENTRIES)) is None
    assert run_size_problem(entries(MAX_RUN_ENTRIES + 1))
    assert run_size_problem(entries(64, count=64, shards=1)) is None  # 4,096 sims
    assert MAX_RUN_SIMS == 64 * 64 and run_size_problem(entries(65, count=64, shards=1))
    assert run_size_problem(entries(1, count=64, shards=64)) is None
