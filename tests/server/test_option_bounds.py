"""Issue 32: a variant's option values are checked against the type the simulator's own option
table gives each option (read from its sources), and every number in a value, composite ones
too (the clock domains), is finite and bounded. An attacker got 201 for
`{"-visualizer_enabled": "-trace"}` (the simulator reads a bool it cannot parse as the next
option's name) and for `1e400:…`, `inf:…`, `1e-320:…` clock domains."""

from __future__ import annotations

import pytest

from cascade_core import simulator_layout as layout
from cascade_core.option_types import parse_option_table, typed_value_problem
from cascade_core.variants import (
    OPTION_VALUE,
    VariantError,
    config_file_options,
    core_clock_mhz,
    normalize_options,
    value_problem,
)
from cascade_server.services.option_table import read_option_table
from tests.accelsim_build import finished_prefix
from tests.conftest import ready_trace, write_config
from tests.helpers import post_run

QV100 = (
    "-gpgpu_compute_capability_major 7\n-gpgpu_compute_capability_minor 0\n"
    "-gpgpu_clock_domains 1132.0:1132.0:1132.0:850.0\n-gpgpu_n_clusters 80\n-visualizer_enabled 0\n"
    "-gpgpu_runtime_stat 500\n-gpgpu_max_cycle 0\n-gpgpu_ptx_force_max_capability 70\n"
)
# As GPGPU-Sim registers them (gpu-sim.cc, visualizer.cc), line breaks and all.
SOURCE = """
  option_parser_register(opp, "-gpgpu_n_clusters", OPT_UINT32, &n_simt_clusters,
                         "number of processing clusters", "10");
  option_parser_register(opp, "-visualizer_enabled", OPT_BOOL,
                         &g_visualizer_enabled,
                         "Turn on visualizer output (1=On, 0=Off)", "1");
  option_parser_register(
      opp, "-gpgpu_runtime_stat", OPT_CSTR, &gpgpu_runtime_stat,
      "display runtime statistics such as dram utilization {<freq>:<flag>}",
      "10000:0");
  option_parser_register(opp, "-gpgpu_max_cycle", OPT_INT64, &gpu_max_cycle_opt,
                         "terminates gpu simulation early (0 = no limit)", "0");
  option_parser_register(opp, "-gpgpu_ptx_force_max_capability", OPT_UINT32, &x, "", "0");
  for (unsigned j = 0; j < SPECIALIZED_UNIT_NUM; ++j) {
    std::stringstream ss;
    ss << "-specialized_unit_" << j + 1;
    option_parser_register(opp, ss.str().c_str(), OPT_CSTR, &specialized_unit_string[j], "", "0");
  }
"""


def test_the_option_table_is_read_from_the_registrations():
    assert parse_option_table(SOURCE) == {
        "-gpgpu_n_clusters": "uint32",
        "-visualizer_enabled": "bool",
        "-gpgpu_runtime_stat": "text",
        "-gpgpu_max_cycle": "int64",
        "-gpgpu_ptx_force_max_capability": "uint32",
    }
    # a name two registrations give different types has none (its values follow the general rules)
    twice = SOURCE + 'option_parser_register(opp, "-gpgpu_n_clusters", OPT_CSTR, &s, "", "");'
    assert "-gpgpu_n_clusters" not in parse_option_table(twice)


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("bool", "-trace"),  # read as the next option's name
        ("bool", "2"),  # an assertion in the simulator
        ("bool", "true"),
        ("uint32", "-5"),  # wraps to 4294967291
        ("uint32", "4294967296"),
        ("uint32", "12abc"),  # silently 12
        ("uint32", "010"),  # octal 8
        ("uint32", "1e3"),
        ("int32", "2147483648"),
        ("int64", "9223372036854775808"),
        ("double", "1e-320"),
        ("double", "0e5"),  # its leading 0 is dropped: `e5`
        ("float", "1e39"),
        ("char", "ab"),
    ],
)
def test_a_value_that_does_not_parse_as_its_type_is_refused(kind, value):
    problem = typed_value_problem("-opt", value, kind)
    assert problem is not None and "-opt" in problem and repr(value) in problem


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("bool", "0"),
        ("bool", "1"),
        ("uint32", "400"),
        ("uint32", "0"),
        ("uint32", "0x10"),
        ("int32", "-5"),
        ("uint64", "18446744073709551615"),
        ("double", "0.5"),
        ("float", "1e30"),
        ("char", "P"),
        ("text", "N:64:128:16,L:B:m:L:P"),
    ],
)
def test_a_value_of_its_type_is_taken(kind, value):
    assert typed_value_problem("-opt", value, kind) is None


@pytest.mark.parametrize(
    "value",
    [
        "1e400:1132:1132:850",
        "inf:1132:1132:850",
        "1e-320:1132:1132:850",
        "0:1132:1132:850",
        "1132:1132:850",
        "nan:1:1:1",
        "1132:1132:1132:200000",
        "-5:1132:1132:850",
    ],
)
def test_every_clock_is_parsed_and_bounded(value):
    problem = value_problem("-gpgpu_clock_domains", value)
    assert problem is not None and "four clocks in MHz" in problem
    with pytest.raises(VariantError):  # the worker's rule too
        normalize_options({"-gpgpu_clock_domains": value})


@pytest.mark.parametrize(
    "value", ["1:inf", "500:1e-320", "4,1e400", "N:1e30:128", "-trace", "-gpgpu_n_clusters", "infinity"]
)
def test_every_number_in_any_value_is_finite_and_bounded_and_no_value_is_an_option_name(value):
    assert value_problem("-gpgpu_runtime_stat", value) is not None


def test_plain_and_composite_values_are_taken():
    for value in ("1132.0:1132.0:1132.0:850.0", "1:1:1:1", "100000:1:1:1"):
        assert value_problem("-gpgpu_clock_domains", value) is None
    for value in ("500", "1:15", "4,1", "N:64:128:16,L:B:m:L:P", "-1", "0", "1e9"):
        assert value_problem("-gpgpu_runtime_stat", value) is None


def test_a_stored_run_s_clock_that_is_not_finite_falls_back_to_the_config_s():
    assert core_clock_mhz({"-gpgpu_clock_domains": "1e400:1:1:1"}, 1132.0) == 1132.0
    assert core_clock_mhz({"-gpgpu_clock_domains": "700:1:1:1"}, 1132.0) == 700.0


@pytest.fixture
async def typed(make_server, accelsim_dir):
    write_config(accelsim_dir, "SM7_QV100", QV100)
    source = accelsim_dir / "gpu-simulator/gpgpu-sim/src/gpgpu-sim/gpu-sim.cc"
    source.parent.mkdir(parents=True)
    source.write_text(SOURCE)
    # option_parser.cc's unit test registers made-up options: never part of the table
    (source.parent.parent / "option_parser.cc").write_text(SOURCE.replace("OPT_UINT32", "OPT_CSTR"))
    server = await make_server(accelsim_dir=accelsim_dir)
    await server.store.traces.put_trace(ready_trace())
    return server


def qv100(options: dict) -> dict:
    return {"gpu_config": "SM7_QV100", "count": 1, "options": options}


def test_the_table_of_a_tree_skips_option_parser_s_own_test(tmp_path):
    (tmp_path / "gpu-simulator/gpgpu-sim/src").mkdir(parents=True)
    (tmp_path / "gpu-simulator/gpgpu-sim/src/option_parser.cc").write_text(SOURCE)
    assert read_option_table(tmp_path) == {}
    assert read_option_table(tmp_path / "no-such-tree") == {}


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"-visualizer_enabled": "-trace", "-gpgpu_n_clusters": "40"}, "option's name"),
        ({"-visualizer_enabled": "2"}, "0 or 1"),
        ({"-gpgpu_n_clusters": "-5"}, "from 0 to 4294967295"),
        ({"-gpgpu_n_clusters": "99999999999"}, "from 0 to 4294967295"),
        ({"-gpgpu_n_clusters": "12abc"}, "from 0 to 4294967295"),
        ({"-gpgpu_max_cycle": "1e3"}, "whole number"),
        ({"-gpgpu_clock_domains": "1e400:1132.0:1132.0:850.0"}, "four clocks"),
        ({"-gpgpu_clock_domains": "inf:1132.0:1132.0:850.0"}, "four clocks"),
        ({"-gpgpu_clock_domains": "1e-320:1132.0:1132.0:850.0"}, "four clocks"),
        ({"-gpgpu_runtime_stat": "1:inf"}, "finite"),
    ],
)
async def test_post_runs_refuses_what_the_simulator_would_misread(typed, options, words):
    async with typed.client() as http:
        resp = await post_run(http, [qv100(options)])
        assert resp.status_code == 422, resp.text
        detail = resp.json()["detail"]
        assert isinstance(detail, str) and words in detail and "entry 0 (SM7_QV100)" in detail
        assert (await http.get("/api/runs")).json() == []


async def test_post_runs_takes_values_of_each_option_s_type(typed):
    async with typed.client() as http:
        resp = await post_run(
            http,
            [
                qv100(
                    {
                        "-visualizer_enabled": "1",
                        "-gpgpu_n_clusters": "40",
                        "-gpgpu_runtime_stat": "1000:15",
                        "-gpgpu_clock_domains": "700:700:700:500",
                    }
                )
            ],
        )
        assert resp.status_code == 201, resp.text
        [sim] = resp.json()["sims"]
        assert sim["options"]["-gpgpu_n_clusters"] == "40"


@pytest.mark.accelsim
def test_the_real_simulator_s_table_types_its_options_and_its_own_configs_pass():
    """The pinned build's sources: the options the issue names get their types, and every value
    the tested configs give their options passes the rules (no legitimate value is refused)."""
    build = next(b for b in (finished_prefix() / "builds").iterdir() if layout.is_complete(b))
    accelsim = layout.accelsim_dir(build)
    table = read_option_table(accelsim)
    assert table["-gpgpu_n_clusters"] == "uint32" and table["-visualizer_enabled"] == "bool"
    assert table["-gpgpu_clock_domains"] == "text" and len(table) > 200
    configs = sorted((accelsim / "gpu-simulator/gpgpu-sim/configs/tested-cfgs").iterdir())
    checked = 0
    for config in configs:
        options = config_file_options((config / "gpgpusim.config").read_text(errors="replace"))
        for name, value in options.items():
            if OPTION_VALUE.fullmatch(value):  # (values with spaces or `;` no entry can give)
                kind = table.get(name)
                assert value_problem(name, value) is None, (config.name, name, value)
                assert kind is None or typed_value_problem(name, value, kind) is None, (config.name, name)
                checked += 1
    assert checked > 500
