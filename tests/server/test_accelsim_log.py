"""The incremental Accel-Sim log parser, on the five real logs and on hand-made edge cases.

The real logs are shared/samples-real/runs/<CONFIG>/run.log (byte-identical copies ship as
samples/recordings/<CONFIG>.log.gz, used when shared/ is not beside the checkout). Expected
numbers are the README's tables there, typed in here.
"""

from __future__ import annotations

import dataclasses
import json
import math
import pickle
import re
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cascade_core.models import KernelStat
from cascade_server.ingest.parser import accelsim_log, accelsim_stats
from cascade_server.ingest.parser.accelsim_log import (
    MAX_BLOCK_BYTES,
    MAX_BLOCK_KEYS,
    STATS_LINE_MAX,
    TAIL_LINE_MAX,
    TAIL_LINES,
    LogParser,
    ParsedKernel,
    parse_value,
)
from tests.helpers import RECORDED_RESULTS, recording

REPO = Path(__file__).resolve().parents[2]
SHARED_RUNS = REPO.parent / "shared" / "samples-real" / "runs"

CLOCK_MHZ = {
    "SM7_QV100": 1132.0,
    "SM7_GV100": 1447.0,
    "SM7_TITANV": 1200.0,
    "SM75_RTX2060": 1365.0,
    "SM75_RTX2060_S": 1905.0,
}
CONFIGS = list(CLOCK_MHZ)

# Per config: each kernel's gpu_sim_cycle (uid 1..15), and gpu_tot_sim_cycle and gpu_tot_sim_insn
# at the end of the run (tests/data/recordings/).
EXPECTED_CYCLES = {config: result["cycles"] for config, result in RECORDED_RESULTS.items()}
EXPECTED_TOTALS = {config: (r["total_cycles"], r["total_insn"]) for config, r in RECORDED_RESULTS.items()}
LN = "_Z16layernorm_kernelILi128EEvPK6float4S2_S2_PS0_if"
SGEMM64 = "_Z11sgemm_tiledILi64ELi64ELi16EEvPKfS1_S1_Pfiii"
SGEMM32 = "_Z11sgemm_tiledILi32ELi64ELi16EEvPKfS1_S1_Pfiii"
RESID = "_Z19residual_add_kernelP6float4PKS_i"
EXPECTED_NAMES = [
    "_Z16embedding_kernelPKiPK6float4S3_PS1_ii",
    LN,
    SGEMM64,
    "_Z20kv_cache_copy_kernelPK6float4PS_i",
    "_Z18attn_scores_kernelPKfPfiif",
    "_Z21causal_softmax_kernelILi64EEvPKfPfi",
    "_Z19attn_context_kernelPKfS0_Pfii",
    SGEMM32,
    RESID,
    LN,
    SGEMM64,
    "_Z11gelu_kernelP6float4i",
    SGEMM32,
    RESID,
    LN,
]


@pytest.fixture(autouse=True)
def cold_cache():
    """Every test starts from a cold line cache (hypothesis' examples share it, as the sims of
    one server do)."""
    accelsim_log.clear_cache()
    yield
    accelsim_log.clear_cache()


def num(value: float | str | None) -> float:
    """A stat or field that must be a number (NaN and infinities included)."""
    assert isinstance(value, float | int), value
    return float(value)


@cache
def real_log(config: str) -> tuple[str, ...]:
    """The log's lines without newlines, loaded once per test session."""
    shared = SHARED_RUNS / config / "run.log"
    if shared.exists():
        data = shared.read_bytes()
    else:
        data = recording(config)
    lines = data.decode("utf-8", errors="surrogateescape").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return tuple(lines)


def feed_all(parser: LogParser, lines, size: int) -> list[ParsedKernel]:
    kernels: list[ParsedKernel] = []
    for start in range(0, len(lines), size):
        kernels += parser.feed(list(lines[start : start + size]))
    return kernels


def snapshot(parser: LogParser, kernels: list[ParsedKernel]) -> str:
    """Everything observable, as JSON: NaN compares equal to NaN this way, and key order counts."""
    return json.dumps(
        {
            "kernels": [dataclasses.asdict(k) for k in kernels],
            "latest": parser.latest,
            "tail": parser.log_tail,
            "current": parser.current_kernel,
            "done": parser.kernels_done,
            "exit": parser.exit_detected,
            "in_block": parser.in_block,
            "state": parser.state(),
        }
    )


# ---- an independent, obviously-slow reference: one Python loop over lines ------------------

_REF_NUMBER = re.compile(
    r"[-+]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|nan|inf|infinity)%?", re.I
)
_REF_KEY_EQ_VALUE = re.compile(r"\s*([A-Za-z_][\w.\[\]]*)=([^\s=]+)\s*")


def _ref_value(raw: str):
    s = raw.strip()
    return float(s.rstrip("%")) if _REF_NUMBER.fullmatch(s) else s


def _ref_put(block: dict, key: str, value) -> None:
    """A key seen before in the block goes under `key#2`, `key#3`, ... (the next free one)."""
    name, n = key, 1
    while name in block:
        n += 1
        name = f"{key}#{n}"
    block[name] = value


def reference_stats(lines) -> list[dict]:
    """Stats maps of every finished block, by the documented rules, line by line."""
    blocks: list[dict] = []
    block = None
    for line in lines:
        if line.startswith("kernel_name = "):
            block = {"kernel_name": line[len("kernel_name = ") :].strip()}
            continue
        if block is None:
            continue
        if " = " in line:
            key, _, raw = line.partition(" = ")
            key = key.strip()
            if key:
                _ref_put(block, key, _ref_value(raw))
        else:
            m = _REF_KEY_EQ_VALUE.fullmatch(line)
            if m:
                _ref_put(block, m.group(1), _ref_value(m.group(2)))
        if line.startswith("gpgpu_silicon_slowdown = "):
            blocks.append(block)
            block = None
    return blocks


# ---- the real logs -------------------------------------------------------------------------


@pytest.mark.parametrize("config", CONFIGS)
def test_real_log_whole(config: str) -> None:
    lines = real_log(config)
    clock = CLOCK_MHZ[config]
    parser = LogParser(clock)
    kernels = parser.feed(list(lines))

    assert [k.gpu_sim_cycle for k in kernels] == EXPECTED_CYCLES[config]
    assert [k.kernel_launch_uid for k in kernels] == list(range(1, 16))
    assert [k.kernel_index for k in kernels] == list(range(15))
    assert [k.kernel_name for k in kernels] == EXPECTED_NAMES
    for k in kernels:
        assert k.sim_time_ns == pytest.approx(num(k.gpu_sim_cycle) / clock * 1000)
        assert k.stats["gpu_sim_cycle"] == num(k.gpu_sim_cycle)
        assert k.gpu_sim_insn == k.stats["gpu_sim_insn"] and num(k.gpu_sim_insn) > 0
        assert k.gpu_ipc == k.stats["gpu_ipc"] and math.isfinite(num(k.gpu_ipc))
        assert math.isnan(num(k.stats["gpu_occupancy"]))  # "-nan% " in every block (README)
        assert k.stats["kernel_launch_uid"] == num(k.kernel_launch_uid)
        assert isinstance(k.stats["gpu_total_sim_rate"], float)  # the `key=value` form
        assert str(k.stats["L2_BW"]).endswith("GB/Sec")
    total_cycles, total_insn = EXPECTED_TOTALS[config]
    assert sum(num(k.gpu_sim_cycle) for k in kernels) == total_cycles
    assert sum(num(k.gpu_sim_insn) for k in kernels) == total_insn
    assert parser.latest["gpu_tot_sim_cycle"] == total_cycles
    assert parser.latest["gpu_tot_sim_insn"] == total_insn
    assert parser.latest["gpu_tot_ipc"] == kernels[-1].stats["gpu_tot_ipc"]
    last_rate = [ln for ln in lines if ln.endswith("(inst/sec)")][-1]
    assert parser.latest["sim_rate_ips"] == float(last_rate.split()[2])
    assert parser.exit_detected is True
    assert parser.kernels_done == 15
    assert parser.current_kernel == LN
    assert parser.log_tail == list(lines[-TAIL_LINES:])
    assert parser.log_tail[-1] == "GPGPU-Sim: *** exit detected ***"
    assert not parser.in_block


@pytest.mark.parametrize("config", CONFIGS)
def test_real_log_matches_line_by_line_reference(config: str) -> None:
    lines = real_log(config)
    kernels = feed_all(LogParser(CLOCK_MHZ[config]), lines, 1000)
    expected = reference_stats(lines)
    assert len(expected) == 15
    assert json.dumps([k.stats for k in kernels]) == json.dumps(expected)


@pytest.mark.parametrize("size", [1, 7, 1000, 4096])
def test_chunk_size_does_not_change_anything(size: int) -> None:
    lines = real_log("SM75_RTX2060")
    whole = LogParser(1365)
    expected = snapshot(whole, whole.feed(list(lines)))
    chunked = LogParser(1365)
    assert snapshot(chunked, feed_all(chunked, lines, size)) == expected


def test_to_stat_is_the_api_type() -> None:
    kernel = LogParser(1132).feed(list(real_log("SM7_QV100")))[0]
    stat = kernel.to_stat("sim-0123456789ab")
    assert isinstance(stat, KernelStat)
    assert (stat.sim_id, stat.kernel_index, stat.kernel_launch_uid) == ("sim-0123456789ab", 0, 1)
    assert stat.gpu_sim_cycle == 6146 and stat.sim_time_ns == pytest.approx(6146 / 1132 * 1000)
    body = json.loads(stat.model_dump_json())  # NaN travels as the string "NaN"
    assert body["stats"]["gpu_occupancy"] == "NaN"
    assert body["stats"]["gpu_sim_cycle"] == 6146.0


# ---- any chunking, any resume point --------------------------------------------------------


@cache
def property_slice() -> tuple[str, ...]:
    """RTX2060 from a little before its first block through its third: about 4,200 lines."""
    lines = real_log("SM75_RTX2060")
    first = lines.index(next(ln for ln in lines if ln.startswith("kernel_name = ")))
    ends = [i for i, ln in enumerate(lines) if ln.startswith("gpgpu_silicon_slowdown = ")]
    return lines[first - 60 : ends[2] + 5]


@cache
def property_expected() -> str:
    parser = LogParser(1365)
    return snapshot(parser, parser.feed(list(property_slice())))


def split_at(lines, cuts: list[int]) -> list[list[str]]:
    bounds = [0, *sorted(set(cuts)), len(lines)]
    return [list(lines[a:b]) for a, b in zip(bounds, bounds[1:])]


cut_lists = st.lists(st.integers(min_value=0, max_value=len(property_slice())), max_size=40)
# 60 ways to cut the log into chunks per property; a slow example is the machine's, not a bug.
chunkings = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@chunkings
@given(cuts=cut_lists)
def test_any_chunking_gives_the_same_result(cuts: list[int]) -> None:
    parser = LogParser(1365)
    kernels: list[ParsedKernel] = []
    for chunk in split_at(property_slice(), cuts):
        kernels += parser.feed(chunk)
    assert len(kernels) == 3
    assert snapshot(parser, kernels) == property_expected()


@chunkings
@given(cuts=cut_lists, data=st.data())
def test_resuming_from_json_state_gives_the_same_result(cuts: list[int], data) -> None:
    chunks = split_at(property_slice(), cuts)
    resume_after = data.draw(st.lists(st.booleans(), min_size=len(chunks), max_size=len(chunks)))
    parser = LogParser(1365)
    kernels: list[ParsedKernel] = []
    for chunk, resume in zip(chunks, resume_after):
        kernels += parser.feed(chunk)
        if resume:  # what a restarted server does: the state went through the database as JSON
            parser = LogParser(1365, state=json.loads(json.dumps(parser.state(), allow_nan=True)))
    assert snapshot(parser, kernels) == property_expected()


@chunkings
@given(cuts=cut_lists, newline_at_end=st.booleans())
def test_a_chunk_given_as_its_text_gives_the_same_result(cuts: list[int], newline_at_end: bool) -> None:
    # The ingest workers are sent each chunk's text, every line ending in a newline; a text
    # whose last line has none is read as the same lines.
    parser = LogParser(1365)
    kernels: list[ParsedKernel] = []
    for chunk in split_at(property_slice(), cuts):
        text = "".join(line + "\n" for line in chunk)
        kernels += parser.feed_text(text if newline_at_end or not chunk else text[:-1])
    assert snapshot(parser, kernels) == property_expected()


@pytest.mark.parametrize("config", ["SM7_QV100", "SM75_RTX2060"])
def test_a_state_saved_by_the_previous_version_resumes_mid_block(config: str) -> None:
    # Version 1 saved the open block as its stats map, keys numbered; a database written then
    # holds such states, and the sims they stand for go on exactly as if never stopped.
    lines = real_log(config)
    whole = LogParser(CLOCK_MHZ[config]).feed(list(lines))
    for cut in (2_000, 2_001, 9_999, 20_000):
        first = LogParser(CLOCK_MHZ[config])
        kernels = first.feed(list(lines[:cut]))
        state = first.state()
        assert state["version"] == 3 and state["block"], "the cut falls inside a block"
        old = {**state, "version": 1, "block": accelsim_stats.block_stats(state["block"])}
        resumed = LogParser(CLOCK_MHZ[config], state=json.loads(json.dumps(old)))
        kernels += resumed.feed(list(lines[cut:]))
        assert json.dumps([dataclasses.asdict(k) for k in kernels]) == json.dumps(
            [dataclasses.asdict(k) for k in whole]
        )


# Blocks built from a few keys that repeat, the way Accel-Sim's per-partition sections do, some
# carrying data (`chip skew: 96/48`), some literally `<key>#<n>`, `key=value` lines and junk;
# consecutive blocks mostly alike, as in a real log, so most lines come from the parser's cache.
# Any such log, in any chunking, with a restore anywhere, gives the line-by-line reference's
# stats.
_common_line = st.sampled_from(["a", "b", "c", " a "]).map(lambda key: f"{key} = 1")
_data_line = st.one_of(st.integers(0, 3).map(lambda n: f"chip skew: {n}/2 = 0.5"), st.just("kernel_name=y"))
_rare_line = st.sampled_from(
    [
        "b#2 = 1",
        "a#3 = 1",
        "kernel_name = x",
        "n_cmd=4 n_nop=2",
        "rate=7",
        "b=2",
        "kernel_name=y",
        "==== junk ====",
        " = 3",
        "x",
    ]
)
_body_lines = st.one_of(_common_line, _common_line, _data_line, _data_line, _data_line, _rare_line)


@st.composite
def alike_blocks(draw) -> list[str]:
    body = draw(st.lists(_body_lines, max_size=30))
    lines: list[str] = []
    for n in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):  # this block differs from the one before in a few lines
            for _ in range(draw(st.integers(1, 3))):
                at = draw(st.integers(0, len(body)))
                new = draw(st.lists(st.one_of(_data_line, _body_lines), max_size=2))
                body = [*body[:at], *new, *body[at + 1 :]]
        lines += block("_Z1kv", str(n), *body)
    return lines


@pytest.mark.slow
@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(lines=alike_blocks(), data=st.data())
def test_alike_blocks_in_any_chunking_and_resume_match_the_reference(lines, data) -> None:
    cuts = data.draw(st.lists(st.integers(0, len(lines)), max_size=12))
    chunks = split_at(lines, cuts)
    resume_after = data.draw(st.lists(st.booleans(), min_size=len(chunks), max_size=len(chunks)))
    parser = LogParser(1000)
    kernels: list[ParsedKernel] = []
    for chunk, resume in zip(chunks, resume_after):
        kernels += parser.feed(chunk)
        if resume:
            parser = LogParser(1000, state=json.loads(json.dumps(parser.state(), allow_nan=True)))
    assert [k.stats for k in kernels] == reference_stats(lines)


def test_a_key_that_differed_in_an_earlier_chunk_is_counted_in_later_ones() -> None:
    # The second block differs from the first in its first data-carrying key, which is the
    # same as a later one; the chunk holding that later one is otherwise like the first block.
    parser = LogParser(1000)
    parser.feed(block("_Z1kv", "1", "chip skew: 0/2 = 1", "a = 1", "chip skew: 1/2 = 2"))
    second = block("_Z1kv", "2", "chip skew: 1/2 = 3", "a = 1", "chip skew: 1/2 = 4")
    parser.feed(second[:10])
    [kernel] = parser.feed(second[10:])
    assert kernel.stats["chip skew: 1/2"] == 3.0
    assert kernel.stats["chip skew: 1/2#2"] == 4.0
    assert [k.stats for k in [kernel]] == reference_stats(second)


def test_state_is_a_snapshot_not_a_view() -> None:
    lines = property_slice()
    parser = LogParser(1365)
    parser.feed(list(lines[:200]))  # ends inside the first block
    assert parser.in_block
    state = parser.state()
    before = json.dumps(state)
    assert dict(state["block"])["kernel_name"] == EXPECTED_NAMES[0]
    assert parser.feed(list(lines[200:]))  # finishes that block and more
    assert json.dumps(state) == before


# ---- truncated logs ------------------------------------------------------------------------


def test_log_cut_mid_block_yields_only_finished_kernels() -> None:
    lines = real_log("SM7_TITANV")
    starts = [i for i, ln in enumerate(lines) if ln.startswith("kernel_name = ")]
    cut = starts[5] + 700  # inside the sixth block
    full = LogParser(1200).feed(list(lines))
    parser = LogParser(1200)
    kernels = feed_all(parser, lines[:cut], 1000)
    assert json.dumps([dataclasses.asdict(k) for k in kernels]) == json.dumps(
        [dataclasses.asdict(k) for k in full[:5]]
    )
    assert parser.kernels_done == 5 and parser.in_block and not parser.exit_detected
    assert parser.latest["gpu_tot_sim_cycle"] == full[4].stats["gpu_tot_sim_cycle"]


@pytest.mark.parametrize("which", ["kv_line", "slowdown_line", "launch_line", "exit_line"])
def test_log_cut_mid_line_claims_nothing_false(which: str) -> None:
    lines = list(real_log("SM7_TITANV"))
    ends = [i for i, ln in enumerate(lines) if ln.startswith("gpgpu_silicon_slowdown = ")]
    launches = [i for i, ln in enumerate(lines) if ln.startswith("launching kernel name: ")]
    if which == "kv_line":
        cut = ends[2] - 30
        partial = lines[cut][: len(lines[cut]) // 2]
    elif which == "slowdown_line":  # "gpgpu_silicon_slowdown = 368369x" cut inside the number
        cut = ends[2]
        partial = lines[cut][: len("gpgpu_silicon_slowdown = ") + 2]
    elif which == "launch_line":
        cut = launches[3]
        partial = lines[cut][: len("launching kernel name: ") + 8]
    else:
        cut = len(lines) - 1
        partial = lines[cut][:-5]
    parser = LogParser(1200)
    kernels = feed_all(parser, lines[:cut] + [partial], 1000)
    expected_done = {"kv_line": 2, "slowdown_line": 2, "launch_line": 3, "exit_line": 15}[which]
    assert len(kernels) == parser.kernels_done == expected_done
    assert [k.gpu_sim_cycle for k in kernels] == EXPECTED_CYCLES["SM7_TITANV"][:expected_done]
    assert parser.exit_detected is False
    if which == "launch_line":
        assert parser.current_kernel == EXPECTED_NAMES[2]  # the cut name is not taken
    assert parser.log_tail[-1] == partial


def test_slowdown_line_without_x_completes_when_the_next_line_arrives() -> None:
    head = ["kernel_name = k ", "kernel_launch_uid = 1 ", "gpu_sim_cycle = 10"]
    parser = LogParser(1000)
    assert parser.feed([*head, "gpgpu_silicon_slowdown = 12"]) == []
    assert parser.in_block
    resumed = LogParser(1000, state=json.loads(json.dumps(parser.state())))
    [kernel] = resumed.feed(["GPGPU-Sim: *** simulation thread exiting ***"])
    assert kernel.stats["gpgpu_silicon_slowdown"] == 12.0 and kernel.gpu_sim_cycle == 10
    # Complete-looking last lines end the block at once, including the `Nan` of newer builds.
    for last in ("gpgpu_silicon_slowdown = 368369x", "gpgpu_silicon_slowdown = Nan"):
        [kernel] = LogParser(1000).feed([*head, last])
        assert kernel.sim_time_ns == pytest.approx(10.0)


# ---- hand-made edge cases ------------------------------------------------------------------


def block(name: str = "_Z3fooPf", uid: str = "7", *body: str, end: str = "368369x") -> list[str]:
    return [
        f"kernel_name = {name} ",
        f"kernel_launch_uid = {uid} ",
        "gpu_sim_cycle = 2000",
        "gpu_sim_insn = 4000",
        "gpu_ipc =       2.0000",
        "gpu_tot_sim_cycle = 9000",
        "gpu_tot_sim_insn = 12000",
        "gpu_tot_ipc =       1.3333",
        *body,
        "gpgpu_simulation_rate = 777 (inst/sec)",
        "gpgpu_simulation_rate = 55 (cycle/sec)",
        f"gpgpu_silicon_slowdown = {end}",
    ]


def stats_of(lines: list[str]) -> dict:
    """The stats of the one kernel block `lines` hold."""
    [k] = LogParser(1000).feed(lines)
    return k.stats


def test_both_launch_line_formats() -> None:
    parser = LogParser(1000)
    parser.feed(["launching kernel name: _Z1av uid: 1"])
    assert parser.current_kernel == "_Z1av"
    parser.feed(["launching kernel name: _Z1bv uid: 2 cuda_stream_id: 0", "thread block = 0,0,0"])
    assert parser.current_kernel == "_Z1bv"
    parser.feed(["launching kernel name: ", "launching kernel name: _Z1cv"])  # no uid: ignored
    assert parser.current_kernel == "_Z1bv"
    parser.feed(["launching kernel name: _Z1dv uid: 4", "launching memcpy command : MemcpyHtoD"])
    assert parser.current_kernel == "_Z1dv"
    assert parser.kernels_done == 0


def test_special_values() -> None:
    body = [
        "gpu_occupancy = -nan% ",
        "gpu_tot_occupancy = 95.6263% ",
        "Miss_rate = nan",
        "Row_Buffer_Locality_write = -nan",
        "a_inf = inf",
        "b_inf = -inf",
        "c = INF",
        "maybe = none",
        "avg = 1.5e3",
        "neg = -2",
        "maxmflatency = 493 ",
        "L2_BW  =   1.9742 GB/Sec",
        "pct_only = %",
        "under = 1_000",
        "empty_value = ",
        "\tindented_key\t = 3\t",
        "gpu_stall_icnt2sh    = 0",
    ]
    s = stats_of(block("_Z3fooPf", "7", *body))
    assert math.isnan(num(s["gpu_occupancy"])) and s["gpu_tot_occupancy"] == 95.6263
    assert math.isnan(num(s["Miss_rate"])) and math.isnan(num(s["Row_Buffer_Locality_write"]))
    assert s["a_inf"] == math.inf and s["b_inf"] == -math.inf and s["c"] == math.inf
    assert s["maybe"] == "none"
    assert (s["avg"], s["neg"], s["maxmflatency"]) == (1500.0, -2.0, 493.0)
    assert s["L2_BW"] == "1.9742 GB/Sec"
    assert (s["pct_only"], s["under"], s["empty_value"]) == ("%", "1_000", "")
    assert s["indented_key"] == 3.0 and s["gpu_stall_icnt2sh"] == 0.0
    assert s["gpgpu_silicon_slowdown"] == "368369x"
    assert s["gpgpu_simulation_rate"] == "777 (inst/sec)"  # the first occurrence keeps the name
    assert s["gpgpu_simulation_rate#2"] == "55 (cycle/sec)"


def test_non_finite_head_values_become_none() -> None:
    lines = block("_Z1kv", "3")
    lines[2], lines[4], lines[7] = "gpu_sim_cycle = nan", "gpu_ipc = -nan", "gpu_tot_ipc = inf"
    parser = LogParser(1000)
    [k] = parser.feed(lines)
    assert k.gpu_sim_cycle is None and k.sim_time_ns is None and k.gpu_ipc is None
    assert math.isnan(num(k.stats["gpu_ipc"]))
    assert parser.latest == {
        "gpu_tot_sim_cycle": 9000.0,
        "gpu_tot_sim_insn": 12000.0,
        "gpu_tot_ipc": None,
        "sim_rate_ips": 777.0,
    }
    assert LogParser(0).feed(block())[0].sim_time_ns is None  # a config with no known clock
    assert LogParser(1500).feed(block())[0].sim_time_ns == pytest.approx(2000 / 1500 * 1000)


def test_concurrent_kernels_block() -> None:
    [k] = LogParser(1000).feed(block("_Z1av _Z1bv", "3 4"))
    assert (k.kernel_name, k.kernel_launch_uid) == ("_Z1av", 3)
    assert k.stats["kernel_name"] == "_Z1av _Z1bv" and k.stats["kernel_launch_uid"] == "3 4"


def test_kernel_name_stays_a_string() -> None:
    [k] = LogParser(1000).feed(block("inf", "1"))
    assert k.kernel_name == "inf" and k.stats["kernel_name"] == "inf"


def test_every_value_is_kept_repeats_numbered_in_log_order() -> None:
    body = [
        "dup = 1",
        "gpu_sim_cycle = 99",
        "other = x",
        "dup = 2",
        "gpu_total_sim_rate=5",
        "gpu_total_sim_rate = 6",
        "late = 1",
        "kv_first = 1",
        "kv_first=2",
        "dup#3 = taken",
        "dup = 1",
        "dup = 4",
        "dup#3 = again",
    ]
    lines = block("_Z1kv", "1", *body)
    expected = None
    for size in range(1, len(lines) + 1):
        parser = LogParser(1000)
        [k] = feed_all(parser, lines, size)
        assert k.gpu_sim_cycle == 2000  # the head value keeps the name; the repeat is numbered
        assert k.stats["gpu_sim_cycle#2"] == 99
        # dup#3 was a key of its own already: the third `dup` takes the next free number.
        assert [k.stats[n] for n in ("dup", "dup#2", "dup#3", "dup#4", "dup#5")] == [1, 2, "taken", 1, 4]
        assert k.stats["dup#3#2"] == "again"
        assert (k.stats["gpu_total_sim_rate"], k.stats["gpu_total_sim_rate#2"]) == (5, 6)
        assert (k.stats["kv_first"], k.stats["kv_first#2"]) == (1, 2)
        order = list(k.stats)
        assert order[:3] == ["kernel_name", "kernel_launch_uid", "gpu_sim_cycle"]
        assert order.index("gpu_total_sim_rate") < order.index("late")
        assert order.index("dup#2") < order.index("gpu_total_sim_rate")
        if expected is None:
            expected = json.dumps(k.stats)
        assert json.dumps(k.stats) == expected


def test_numbering_carries_on_after_a_restore_mid_block() -> None:
    lines = block("_Z1kv", "1", "bank = 1", "bank#2 = literal", "bank = 2", "bank = 3")
    for cut in range(1, len(lines)):
        first = LogParser(1000)
        first.feed(lines[:cut])
        resumed = LogParser(1000, state=json.loads(json.dumps(first.state())))
        [k] = resumed.feed(lines[cut:])
        assert [k.stats[n] for n in ("bank", "bank#2", "bank#3", "bank#4")] == [1, "literal", 2, 3]


@pytest.mark.parametrize("config", CONFIGS)
def test_a_real_block_keeps_every_line(config: str) -> None:
    """Every `key = value` line of a real block is in its stats map, per-partition repeats
    (one Bank_Level_Parallism per DRAM channel: 32 on QV100) included, in log order."""
    lines = real_log(config)
    [first, *_] = LogParser(CLOCK_MHZ[config]).feed(list(lines))
    start = lines.index(next(ln for ln in lines if ln.startswith("kernel_name = ")))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("gpgpu_silicon_slowdown = "))
    body = lines[start + 1 : end + 1]
    kv_lines = [
        ln
        for ln in body
        if " = " in ln
        and ln.partition(" = ")[0].strip()
        or " = " not in ln
        and _REF_KEY_EQ_VALUE.fullmatch(ln)
    ]
    assert len(first.stats) == 1 + len(kv_lines)  # kernel_name is the block's first line
    blp = [float(ln.partition(" = ")[2]) for ln in body if ln.startswith("Bank_Level_Parallism = ")]
    names = ["Bank_Level_Parallism"] + [f"Bank_Level_Parallism#{n}" for n in range(2, len(blp) + 1)]
    assert [first.stats[n] for n in names] == blp
    assert f"Bank_Level_Parallism#{len(blp) + 1}" not in first.stats
    assert (
        len(blp)
        == {"SM7_QV100": 32, "SM7_GV100": 32, "SM7_TITANV": 24, "SM75_RTX2060": 12, "SM75_RTX2060_S": 16}[
            config
        ]
    )


def test_key_value_forms() -> None:
    body = [
        "icnt_total_pkts_mem_to_simt=352252",
        "  spaced_eq=7  ",
        "n_cmd=1 n_nop=2 n_act=3",
        "========= Core cache stats =========",
        "mrqq: max=64 avg=1.63",
        "DRAM[0]: 16 bks, busW=2",
        "\tL1D_cache_core[0]: Access = 196, Miss = 193, Miss_rate = 0.985",
        "average row locality = 2056/187 = 10.99",
        " = orphan value",
        "no separator here",
        "a=b=c",
        "x =y",
        "y= z",
    ]
    s = stats_of(block("_Z1kv", "1", *body))
    assert s["icnt_total_pkts_mem_to_simt"] == 352252.0 and s["spaced_eq"] == 7.0
    assert s["L1D_cache_core[0]: Access"] == "196, Miss = 193, Miss_rate = 0.985"
    assert s["average row locality"] == "2056/187 = 10.99"
    for junk in ("n_cmd", "mrqq: max", "", "a", "x", "y", "DRAM[0]: 16 bks, busW"):
        assert junk not in s


def test_junk_never_raises() -> None:
    junk = [
        "\x00\x01\x02\xff\ufffd",
        "\udcff\udcfe binary = \udc80",
        "=",
        " = ",
        "= = =",
        "kernel_name =",
        "\r",
        "key = value\r",
        "",
        " " * 500,
        "é = ü",
        "x" * 100_000,
        "launching kernel name: \x00 uid: 1",
    ]
    parser = LogParser(1000)
    lines = [*junk, "gpgpu_silicon_slowdown = 1x", *block("_Z3fooPf", "7", *junk), *junk]
    kernels = parser.feed(lines)
    assert len(kernels) == 1 and kernels[0].kernel_name == "_Z3fooPf"
    stats = kernels[0].stats
    assert stats["key"] == "value"  # the stray "\r" is whitespace
    assert stats["\udcff\udcfe binary"] == "\udc80" and stats["é"] == "ü"
    assert parser.current_kernel == "\x00"
    again = LogParser(1000, state=json.loads(json.dumps(parser.state())))
    # The tail's lines are cut to TAIL_LINE_MAX characters, saying how long they were.
    said = "… (100,000 characters)"
    tail = [
        ln if len(ln) <= TAIL_LINE_MAX else ln[: TAIL_LINE_MAX - len(said)] + said
        for ln in lines[-TAIL_LINES:]
    ]
    assert again.log_tail == parser.log_tail == tail
    assert parser.feed([]) == []


def test_newlines_inside_a_line_break_it() -> None:
    lines = block("_Z1kv", "1", "a = 1\nb = 2\nkernel_name_x = 3")
    joined = ["launching kernel name: _Z1kv uid: 1\n" + lines[0], *lines[1:-1], lines[-1] + "\nlast"]
    parser = LogParser(1000)
    [k] = parser.feed(joined)
    assert (k.kernel_name, k.stats["a"], k.stats["b"], k.stats["kernel_name_x"]) == ("_Z1kv", 1, 2, 3)
    assert parser.current_kernel == "_Z1kv" and parser.log_tail[-1] == "last"


def test_new_block_before_the_end_drops_the_cut_one() -> None:
    first = block("_Z1av", "1")[:5]  # cut off: no slowdown line
    for size in (1, 3, 100):
        parser = LogParser(1000)
        kernels = feed_all(parser, first + block("_Z1bv", "2"), size)
        assert [(k.kernel_index, k.kernel_name, k.kernel_launch_uid) for k in kernels] == [(0, "_Z1bv", 2)]


def test_lines_outside_blocks_are_not_stats() -> None:
    parser = LogParser(1000)
    lines = ["gpu_sim_cycle = 5", "gpgpu_silicon_slowdown = 3x", "-gpgpu_clock_domains 1132.0:1132.0"]
    assert parser.feed(lines) == [] and not parser.in_block
    assert parser.latest == {
        "gpu_tot_sim_cycle": None,
        "gpu_tot_sim_insn": None,
        "gpu_tot_ipc": None,
        "sim_rate_ips": None,
    }
    parser.feed(["gpgpu_simulation_rate = 42 (inst/sec)", "gpgpu_simulation_rate = 9 (cycle/sec)"])
    assert parser.latest["sim_rate_ips"] == 42.0


def test_a_block_that_never_ends_keeps_a_bounded_state() -> None:
    parser = LogParser(1000)
    parser.feed(["kernel_name = _Z1kv "])
    for start in range(0, MAX_BLOCK_KEYS + 5000, 5000):
        parser.feed([f"key_{i} = {i}" for i in range(start, start + 5000)])
    block = dict(parser.state()["block"])  # (key, value) pairs, the keys distinct here
    assert len(block) == MAX_BLOCK_KEYS and block["key_0"] == 0.0
    assert parser.kernels_done == 0


@pytest.mark.parametrize("value_chars", [1, 100, STATS_LINE_MAX - 20])
def test_a_block_that_never_ends_keeps_its_bytes_bounded_whatever_its_lines(value_chars) -> None:
    parser = LogParser(1000)
    parser.feed(["kernel_name = _Z1kv "])
    value = "v" * value_chars
    for start in range(0, MAX_BLOCK_KEYS + 5000, 2500):
        parser.feed([f"key_{i} = {value}" for i in range(start, start + 2500)])
    block = dict(parser.state()["block"])  # (key, value) pairs, the keys distinct here
    size = sum(len(k) + len(v) if isinstance(v, str) else 8 for k, v in block.items())
    assert size <= MAX_BLOCK_BYTES
    assert len(block) == min(MAX_BLOCK_KEYS, len(block))
    assert block["key_0"] == value
    # Only what could not fit is left out: the block holds all it can, in order.
    assert size > MAX_BLOCK_BYTES - 2 * STATS_LINE_MAX or len(block) == MAX_BLOCK_KEYS
    assert list(block)[1:] == [f"key_{i}" for i in range(len(block) - 1)]
    assert len(pickle.dumps(parser.state(), protocol=5)) < 2 * MAX_BLOCK_BYTES  # as saved, before compression


@pytest.mark.parametrize("bound", ["keys", "bytes"])
def test_a_block_near_its_bounds_reads_each_chunk_in_one_pass(bound, monkeypatch) -> None:
    # A block a little short of its key or byte bound is measured once, not again for every line
    # after it (a 12 KB chunk once held the server's writer for 20 s): a chunk is one read,
    # whatever its length, and the block still keeps its first lines up to the bound.
    parser = LogParser(1000)
    parser.feed(["kernel_name = _Z1kv "])
    if bound == "keys":  # two keys short of MAX_BLOCK_KEYS
        parser.feed([f"key_{i} = 1" for i in range(MAX_BLOCK_KEYS - 3)])
    else:  # 1,500 bytes short of MAX_BLOCK_BYTES: room for the worst-case line, and then some
        value = "v" * (STATS_LINE_MAX - 24)
        parser.feed([f"key_{i} = {value}" for i in range(MAX_BLOCK_BYTES // STATS_LINE_MAX)])
        used = sum(accelsim_stats.pair_bytes(pair) for pair in parser.state()["block"])
        while (short := MAX_BLOCK_BYTES - used - 1500) > 0:
            line = f"fill_{used} = " + "v" * min(short - 12, STATS_LINE_MAX - 24)
            parser.feed([line])
            used += accelsim_stats.pair_bytes(parser.state()["block"][-1])
    before = list(parser.state()["block"])
    reads: list[int] = []
    measured: list[int] = []
    real_read, real_bytes = accelsim_log.read_block_lines, accelsim_log.pair_bytes

    def counted_read(*args):
        reads.append(1)
        return real_read(*args)

    def counted_bytes(pair):
        measured.append(1)
        return real_bytes(pair)

    monkeypatch.setattr(accelsim_log, "read_block_lines", counted_read)
    monkeypatch.setattr(accelsim_log, "pair_bytes", counted_bytes)
    late = [f"late_{i} = 1" for i in range(3000)]
    for chunk in ([""] * 3000, ["==== junk ===="] * 3000, late):
        parser.feed(chunk)
    assert len(reads) == 3  # one per chunk
    assert len(measured) <= len(before) + 3000  # the block once, then only what was added
    block = parser.state()["block"]
    added = [key for key, _ in block[len(before) :]]
    assert block[: len(before)] == before and added == [f"late_{i}" for i in range(len(added))]
    assert len(block) <= MAX_BLOCK_KEYS and sum(map(accelsim_stats.pair_bytes, block)) <= MAX_BLOCK_BYTES
    assert 0 < len(added) < 3000  # up to the bound, no further


def test_lines_that_are_not_text_are_a_clear_error() -> None:
    parser = LogParser(1000)
    parser.feed(["launching kernel name: _Z1kv uid: 1"])
    before = json.dumps(parser.state())
    with pytest.raises(TypeError, match="expected str instance"):
        parser.feed(["ok", b"gpu_sim_cycle = 1"])  # type: ignore[list-item]
    assert json.dumps(parser.state()) == before


def test_log_tail_spans_chunks() -> None:
    parser = LogParser(1000)
    for i in range(30):
        parser.feed([f"line {i}"])
    assert parser.log_tail == [f"line {i}" for i in range(10, 30)]
    parser.feed([f"big {i}" for i in range(50)])
    assert parser.log_tail == [f"big {i}" for i in range(30, 50)]


@pytest.mark.parametrize(
    "state",
    [
        {},
        {"version": 99},
        [],
        "x",
        {
            "version": 1,
            "kernels_done": -1,
            "current_kernel": None,
            "latest": {},
            "log_tail": [],
            "exit_detected": False,
            "block": None,
            "block_ended": False,
        },
    ],
)
def test_bad_state_is_a_clear_error(state) -> None:
    with pytest.raises(ValueError, match="invalid LogParser state"):
        LogParser(1000, state=state)


def test_parse_value() -> None:
    assert parse_value(" 12 ") == 12.0 and math.isnan(num(parse_value("-nan%")))
    assert parse_value("none") == "none" and parse_value("") == ""
    assert parse_value("12 (inst/sec)") == "12 (inst/sec)"


def test_the_shared_cache_stays_bounded_however_many_lines() -> None:
    parser = LogParser(1000)
    for n in range(3):  # blocks of 20,000 distinct lines and keys each
        parser.feed(block("_Z1kv", str(n), *(f"key_{n}_{i} = {i}" for i in range(20_000))))
    assert 0 < len(accelsim_stats._line_cache) <= accelsim_stats._LINE_CACHE_LIMIT


def test_the_cache_never_passes_its_bound_within_one_read() -> None:
    limit = accelsim_stats._LINE_CACHE_LIMIT
    lines = [f"k{i} = {i}" for i in range(limit + 100)] + ["long = " + "9" * 300]
    pairs: list = []
    accelsim_stats.read_block_lines(pairs, lines, 0, 10**9)
    block = accelsim_stats.block_stats(pairs)
    assert len(block) == limit + 101 and block["long"] == float("9" * 300)  # every line read
    assert len(accelsim_stats._line_cache) <= limit and lines[-1] not in accelsim_stats._line_cache


def test_repeats_are_numbered_past_names_already_taken() -> None:
    pairs: list = [("kernel_name", "k")]
    lines = [
        "a = 1",
        "a#2 = x",
        "a = 2",
        "a = 3",
        " kernel_name = again",
        "a#2 = y",
        "gpgpu_silicon_slowdown = 9x",
        "after = 1",
    ]
    stop = accelsim_stats.read_block_lines(pairs, lines, 0, 50_000)
    assert stop == (7, True)  # the block's last line read, not what follows it
    assert list(accelsim_stats.block_stats(pairs).items()) == [
        ("kernel_name", "k"),
        ("a", 1.0),
        ("a#2", "x"),
        ("a#3", 2.0),
        ("a#4", 3.0),
        ("kernel_name#2", "again"),
        ("a#2#2", "y"),
        ("gpgpu_silicon_slowdown", "9x"),
    ]
    # A next block's first line stops the read before it; a full block takes no more keys.
    full: list = [("kernel_name", "k")]
    assert accelsim_stats.read_block_lines(full, ["b = 1", "c = 2", "kernel_name = next", "d = 3"], 0, 2) == (
        2,
        False,
    )
    assert accelsim_stats.block_stats(full) == {"kernel_name": "k", "b": 1.0}


def test_a_key_repeated_without_end_is_numbered_on_after_a_restore() -> None:
    pairs: list = [("kernel_name", "k")]
    lines = [f"a = {i}" for i in range(300)]
    accelsim_stats.read_block_lines(pairs, lines[:100], 0, 50_000)
    accelsim_log.clear_cache()  # the caches cold, as after a restore: the numbers go on
    accelsim_stats.read_block_lines(pairs, lines[100:], 0, 50_000)
    block = accelsim_stats.block_stats(pairs)
    assert list(block) == ["kernel_name", "a", *(f"a#{n}" for n in range(2, 301))]
    assert list(block.values())[1:] == [float(i) for i in range(300)]


def test_a_chunk_may_be_any_sequence_of_lines() -> None:
    lines = block("_Z1kv", "1", "a = 1", "a = 2")
    [from_tuple] = LogParser(1000).feed(tuple(lines))  # type: ignore[arg-type]
    [from_list] = LogParser(1000).feed(lines)
    assert from_tuple.stats == from_list.stats and from_list.stats["a#2"] == 2.0


def test_lines_too_long_to_be_stats_are_not_read_and_the_tail_is_cut() -> None:
    # An open block is bounded in bytes as well as keys; the tail travels in every sim summary.
    long_value = "9" * STATS_LINE_MAX
    lines = block("_Z1kv", "1", "a = 1", f"b = {long_value}", "c = 3", end="1x" + " " * STATS_LINE_MAX)
    parser = LogParser(1000)
    [kernel] = parser.feed(lines)
    assert "b" not in kernel.stats and kernel.stats["a"] == 1.0 and kernel.stats["c"] == 3.0
    assert "gpgpu_silicon_slowdown" not in kernel.stats  # a block's long last line still ends it
    assert max(map(len, parser.log_tail)) == TAIL_LINE_MAX
