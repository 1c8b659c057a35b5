"""The compiled stats-block loop (cascade_server/_accelsim_merge.c) against its specification,
the Python `read_block_lines` and `parse_value` in accelsim_log.py, on generated input: same
stats, same order, same types, same stopping line, for any lines, any chunking, any key limit,
caches cleared anywhere; bad arguments are a TypeError, never a crash; nothing leaks.

tests/server/test_accelsim_log.py runs the whole parser on both implementations too.
"""

from __future__ import annotations

import math
import shutil
import sys
import sysconfig
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cascade_server import accelsim_log

try:
    from cascade_server import _accelsim_merge as compiled
except ImportError:
    compiled = None  # type: ignore[assignment]


def _can_compile() -> bool:
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc) is not None and (Path(sysconfig.get_paths()["include"]) / "Python.h").exists()


def test_the_compiled_loop_is_built_wherever_it_can_be() -> None:
    # setup.py makes the extension optional, so a broken build would only show as a slower
    # parser: fail here instead, wherever a C compiler and Python's headers are present.
    if compiled is None and not _can_compile():
        pytest.skip("no C compiler or Python headers here: the parser runs its Python loop")
    assert compiled is not None, "a C compiler is here, yet cascade_server._accelsim_merge was not built"
    assert accelsim_log.NATIVE and accelsim_log._read_block_lines is compiled.read_block_lines


needs_compiled = pytest.mark.skipif(compiled is None, reason="the compiled block loop is not built here")


def same(a: object, b: object) -> bool:
    """Equal, of the same type, NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def same_items(a: dict, b: dict) -> bool:
    return list(a) == list(b) and all(same(a[k], b[k]) for k in a)


# Lines made of the pieces the rules turn on: keys that repeat, that look numbered (`a#2`),
# blanks of every kind (str.strip's Unicode ones, float()'s ASCII ones), " = " and bare "=",
# numbers with %, nan/inf spellings, separators float() refuses, non-ASCII digits and letters,
# NUL, lone surrogates (logs are decoded with surrogateescape); and arbitrary text.
_blank = st.sampled_from(["", " ", "  ", "\t", "\r", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\u3000"])
_key = st.sampled_from(
    [
        "a",
        "b",
        "a#2",
        "a#3",
        "b#2#2",
        "kernel_name",
        "gpu_sim_cycle",
        "k.x[1]",
        "é",
        "\udcff",
        "chip skew: 9/4",
        "",
        "x y",
    ]
)
_value = st.one_of(
    st.sampled_from(
        [
            "1",
            "-2.5",
            "+.5",
            "1e5",
            "1E-3",
            "1e999",
            "95.6%",
            "-nan%",
            "nan",
            "-NaN",
            "inf",
            "-Infinity",
            "iNF",
            "none",
            "12 (inst/sec)",
            "1,2",
            "1_0",
            "0x10",
            "1.9742 GB/Sec",
            "15000000x",
            "%",
            "5\t%",
            "5\x1f",
            "\x1c5",
            "５",
            "1\x002",
            "",
            "=",
            " = ",
            "\udc80",
            "Nan",
        ]
    ),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers().map(str),
    st.text(max_size=6),
)
_kv_line = st.builds(
    lambda b1, k, b2, sep, b3, v, b4: f"{b1}{k}{b2}{sep}{b3}{v}{b4}",
    _blank,
    _key,
    _blank,
    st.sampled_from([" = ", "=", " =", "= ", " = = "]),
    _blank,
    _value,
    _blank,
)
# A block's first and last lines (and lines that only look like them) end a read.
_marker_line = st.builds(
    lambda marker, rest: marker + rest,
    st.sampled_from(
        [
            "kernel_name = ",
            "gpgpu_silicon_slowdown = ",
            " kernel_name = ",
            "kernel_name=",
            "gpgpu_silicon_slowdown =",
            "kernel_name",
            "gpgpu_silicon_slowdown = é",
        ]
    ),
    _value,
)
_line = st.one_of(
    _kv_line,
    _kv_line,
    _kv_line,
    _kv_line,
    st.text(max_size=30),
    _marker_line,
    st.sampled_from(["n_cmd=1 n_nop=2", "rate=7", "b=2", "==== x ====", "x", ""]),
)


def run(
    read,
    chunks: list[list[str]],
    starts: list[int],
    max_keys: int,
    clear_after: list[bool],
    cold_after: list[bool],
) -> tuple[dict, list[tuple[int, bool]]]:
    """Each chunk read from its start, as the parser does, with what each read returned."""
    block: dict = {"kernel_name": "k"}
    repeats: dict = {}
    line_cache: dict = {}
    names_cache: dict = {}
    stops = []
    for chunk, start, clear, cold in zip(chunks, starts, clear_after, cold_after):
        stops.append(
            read(block, chunk, start, max_keys, repeats, line_cache, names_cache, accelsim_log._key_eq_value)
        )
        if clear:  # what the parser does when the caches grow
            line_cache.clear()
            names_cache.clear()
        if cold:  # what a restore does
            repeats.clear()
    return block, stops


@needs_compiled
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(_line, max_size=60), data=st.data())
def test_the_compiled_loop_does_what_the_python_one_does(lines: list[str], data) -> None:
    cuts = sorted(data.draw(st.lists(st.integers(0, len(lines)), max_size=6)))
    bounds = [0, *cuts, len(lines)]
    chunks = [lines[a:b] for a, b in zip(bounds, bounds[1:])]
    n = len(chunks)
    starts = [data.draw(st.integers(0, len(chunk) + 1)) for chunk in chunks]
    max_keys = data.draw(st.sampled_from([50_000, 3, 1]))
    clear = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    cold = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    expected = run(accelsim_log.read_block_lines, chunks, starts, max_keys, clear, cold)
    got = run(compiled.read_block_lines, chunks, starts, max_keys, clear, cold)
    assert got[1] == expected[1] and same_items(got[0], expected[0]), (got, expected)


@needs_compiled
@settings(max_examples=1000, deadline=None)
@given(raw=st.one_of(_value, st.text(), st.builds("".join, st.lists(st.one_of(_blank, _value)))))
@example(raw="  1e-3% ")
@example(raw="\u3000-inf\u3000")
@example(raw="5\x1f%")  # str.strip's blanks are not all float()'s
@example(raw="5\x0b%")
@example(raw="-５%")  # non-ASCII digits: float() reads them
def test_the_compiled_parse_value_is_python_s(raw: str) -> None:
    assert same(compiled.parse_value(raw), accelsim_log.parse_value(raw))


@needs_compiled
@pytest.mark.parametrize(
    "args, match",
    [
        (({}, ("a = 1",), 0, 9, {}, {}, {}), "lines is a list"),
        (({}, ["a = 1", 5], 0, 9, {}, {}, {}), r"lines\[1\] is not a str"),
        (([], ["a = 1"], 0, 9, {}, {}, {}), "lines is a list"),
        (({}, ["a = 1"], 0, 9, {}, None, {}), "lines is a list"),
        (({}, ["a = 1"], "0", 9, {}, {}, {}), "an integer is required"),
        (({}, ["a = 1"], 0, None, {}, {}, {}), "an integer is required"),
    ],
)
def test_bad_arguments_are_a_type_error(args, match: str) -> None:
    with pytest.raises(TypeError, match=match):
        compiled.read_block_lines(*args, accelsim_log._key_eq_value)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="read_block_lines"):
        compiled.read_block_lines({}, [])  # type: ignore[call-arg]
    with pytest.raises(OverflowError):
        compiled.read_block_lines({}, [], 1 << 70, 9, {}, {}, {}, accelsim_log._key_eq_value)
    with pytest.raises(TypeError, match="parse_value expects a str"):
        compiled.parse_value(b"1")  # type: ignore[arg-type]


@needs_compiled
def test_a_failing_or_wrong_key_value_reader_is_an_error_not_a_crash() -> None:
    def fails(line: str) -> tuple[str, str] | None:
        raise RuntimeError("reader failed")

    block: dict = {}
    with pytest.raises(RuntimeError, match="reader failed"):
        compiled.read_block_lines(block, ["a = 1", "b=2"], 0, 9, {}, {}, {}, fails)
    assert block == {"a": 1.0}  # what came before the failing line stays
    for wrong in (lambda line: ("k",), lambda line: (1, "v"), lambda line: "kv"):
        with pytest.raises(TypeError, match="key_eq_value must return None or"):
            compiled.read_block_lines({}, ["b=2"], 0, 9, {}, {}, {}, wrong)  # type: ignore[arg-type]
    # An empty key from the reader is no key, as in Python.
    block = {}
    compiled.read_block_lines(block, ["b=2"], 0, 9, {}, {}, {}, lambda line: ("", "2"))
    assert block == {}


@needs_compiled
def test_repeats_are_numbered_past_names_already_taken() -> None:
    block: dict = {"kernel_name": "k"}
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
    stop = compiled.read_block_lines(block, lines, 0, 50_000, {}, {}, {}, accelsim_log._key_eq_value)
    assert stop == (7, True)  # the block's last line read, not what follows it
    assert list(block.items()) == [
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
    full: dict = {"kernel_name": "k"}
    assert compiled.read_block_lines(
        full, ["b = 1", "c = 2", "kernel_name = next", "d = 3"], 0, 2, {}, {}, {}, accelsim_log._key_eq_value
    ) == (2, False)
    assert full == {"kernel_name": "k", "b": 1.0}


@needs_compiled
def test_no_memory_is_kept_beyond_the_caches() -> None:
    # Keys repeated past the small ints Python keeps; ASCII and non-ASCII values, both forms.
    lines = [f"key_{i % 2} = {i}" for i in range(2000)] + [f"é = {i}%\u3000" for i in range(300)]
    lines += ["n_cmd=1 n_nop=2", "rate=7", "x = 1%", "y = none", "z = \udc80"]

    def once() -> None:
        compiled.read_block_lines(
            {"kernel_name": "k"}, lines, 0, 50_000, {}, {}, {}, accelsim_log._key_eq_value
        )

    once()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(200):
            once()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # 200 passes over 2,305 lines: a reference leaked per line would be megabytes.
    assert grown < 64 * 1024, grown


@needs_compiled
@pytest.mark.parametrize("read", ["compiled", "python"])
def test_a_key_repeated_without_end_is_numbered_on_and_caches_few_names(read: str) -> None:
    function = compiled.read_block_lines if read == "compiled" else accelsim_log.read_block_lines
    block: dict = {"kernel_name": "k"}
    names_cache: dict = {}
    lines = [f"a = {i}" for i in range(300)]
    function(block, lines[:100], 0, 50_000, {}, {}, names_cache, accelsim_log._key_eq_value)
    names_cache.clear()  # the caches cleared mid-block, `repeats` cold: the numbers go on
    function(block, lines[100:], 0, 50_000, {}, {}, names_cache, accelsim_log._key_eq_value)
    assert list(block) == ["kernel_name", "a", *(f"a#{n}" for n in range(2, 301))]
    assert list(block.values())[1:] == [float(i) for i in range(300)]
    assert names_cache["a"][:2] == ["a", "a#2"] and len(names_cache["a"]) <= 64


@needs_compiled
def test_the_compiled_caches_have_the_python_bounds() -> None:
    assert (
        compiled.LINE_CACHE_LIMIT,
        compiled.KEYS_CACHED_LIMIT,
        compiled.CACHED_LINE_MAX,
        compiled.CACHED_KEY_MAX,
        compiled.NAMES_CACHED_PER_KEY,
        compiled.STATS_LINE_MAX,
    ) == (
        accelsim_log._LINE_CACHE_LIMIT,
        accelsim_log._KEYS_CACHED_LIMIT,
        accelsim_log._CACHED_LINE_MAX,
        accelsim_log._CACHED_KEY_MAX,
        accelsim_log._NAMES_CACHED_PER_KEY,
        accelsim_log.STATS_LINE_MAX,
    )


@pytest.mark.parametrize("read", ["compiled", "python"])
def test_the_caches_never_pass_their_bounds_within_one_read(read: str) -> None:
    if read == "compiled" and compiled is None:
        pytest.skip("the compiled block loop is not built here")
    function = compiled.read_block_lines if read == "compiled" else accelsim_log.read_block_lines
    limit = accelsim_log._LINE_CACHE_LIMIT
    lines = [f"k{i} = {i}" for i in range(limit + 100)] + ["long = " + "9" * 300]
    line_cache: dict = {}
    names_cache: dict = {}
    block: dict = {}
    function(block, lines, 0, 10**9, {}, line_cache, names_cache, accelsim_log._key_eq_value)
    assert len(block) == limit + 101 and block["long"] == float("9" * 300)  # every line read
    assert len(line_cache) == limit and lines[-1] not in line_cache  # a long line is not kept
    assert len(names_cache) == accelsim_log._KEYS_CACHED_LIMIT
    # A long key's names are not kept either (a line under the length limit can hold one).
    key = "k" * (accelsim_log._CACHED_KEY_MAX + 1)
    names_cache.clear()
    function({}, [f"{key} = 1", f"{key} = 2"], 0, 10, {}, {}, names_cache, accelsim_log._key_eq_value)
    assert names_cache == {}


@needs_compiled
@pytest.mark.parametrize(
    "repeats, line_cache, names_cache, error",
    [
        ({"a": -5}, {}, {}, None),  # a count below 1 is no count: numbered from the block
        ({"a": 0}, {}, {}, None),
        ({"a": sys.maxsize}, {}, {}, None),  # nor one past the block's size
        ({"a": sys.maxsize - 1}, {}, {}, None),
        ({"a": 3}, {}, {}, None),
        ({"a": "x"}, {}, {}, TypeError),
        ({}, {}, {"a": []}, TypeError),
        ({}, {}, {"a": "zzz"}, TypeError),
        ({}, {}, {"a": 5}, TypeError),
        ({}, {}, {"a": [5]}, TypeError),
        ({}, {"a = 2": 5}, {}, TypeError),
        ({}, {"a = 2": ("x",)}, {}, TypeError),
        ({}, {"a = 2": ()}, {}, TypeError),
        ({}, {"a = 2": (1.0, 7)}, {}, TypeError),
    ],
)
def test_bad_cache_contents_are_an_error_never_a_crash(repeats, line_cache, names_cache, error) -> None:
    block: dict = {"kernel_name": "k", "a": 1.0}

    def read() -> None:
        compiled.read_block_lines(
            block, ["a = 2"], 0, 100, repeats, line_cache, names_cache, accelsim_log._key_eq_value
        )

    if error is None:
        read()
        assert block == {"kernel_name": "k", "a": 1.0, "a#2": 2.0}
    else:
        with pytest.raises(error):
            read()


@needs_compiled
def test_subclasses_are_refused_since_their_methods_would_not_run() -> None:
    class Noisy(dict):
        def __setitem__(self, key, value):
            raise AssertionError("would be bypassed")

    calls: list[tuple] = [(Noisy(), ["a = 1"], 0, 9, {}, {}, {}), ({}, ["a = 1"], 0, 9, {}, Noisy(), {})]
    for args in calls:
        with pytest.raises(TypeError, match="the others dicts"):
            compiled.read_block_lines(*args, accelsim_log._key_eq_value)  # type: ignore[call-arg]
