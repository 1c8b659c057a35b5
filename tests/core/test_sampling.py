"""Issue 33, the grouping itself: per-kernel facts in, groups out (identical and stratified),
with ties, single kernels, unknown counts, and real kernel times."""

from __future__ import annotations

from cascade_core.sampling import (
    NARROW_COV,
    TARGET_ERROR_PCT,
    Group,
    KernelFacts,
    groups,
    reduction,
    stated_error_pct,
)

G1, B128 = (1, 1, 1), (128, 1, 1)


def facts(*rows: tuple[str, int | None], real: list[float] | None = None) -> list[KernelFacts]:
    return [
        KernelFacts(i, name, G1, B128, insts, None if real is None else real[i])
        for i, (name, insts) in enumerate(rows)
    ]


def test_identical_kernels_take_the_first_ones_numbers():
    trace = facts(("a", 100), ("b", 50), ("a", 100), ("a", 101), ("b", 50))
    found = groups("identical", trace)
    assert found == [Group(0, (0, 2)), Group(1, (1, 4)), Group(3, (3,))]
    assert reduction(found, trace).kernels_simulated == 3
    assert reduction(found, trace).factor == 401 / 251
    assert stated_error_pct("identical", found, trace) == 0.0


def test_other_dims_are_other_kernels():
    trace = [
        KernelFacts(0, "a", G1, B128, 100),
        KernelFacts(1, "a", (2, 1, 1), B128, 100),
        KernelFacts(2, "a", G1, (64, 1, 1), 100),
    ]
    assert len(groups("identical", trace)) == 3


def test_none_is_every_kernel_and_a_single_kernel_is_its_own_group():
    trace = facts(("a", 10), ("a", 10))
    assert groups("none", trace) == [Group(0, (0,)), Group(1, (1,))]
    one = facts(("k", 5))
    for method in ("identical", "stratified"):
        assert groups(method, one) == [Group(0, (0,))]
    assert groups("stratified", []) == [] and reduction([], []).factor is None


def test_an_unknown_count_is_simulated_and_makes_the_instruction_total_unknown():
    trace = facts(("a", None), ("a", None), ("a", 7))
    assert groups("identical", trace) == [Group(0, (0,)), Group(1, (1,)), Group(2, (2,))]
    assert groups("stratified", trace) == [Group(0, (0,)), Group(1, (1,)), Group(2, (2,))]
    assert reduction(groups("identical", trace), trace).instructions is None


def test_stratified_takes_the_middle_of_a_narrow_stratum_and_splits_a_wide_one():
    trace = facts(("g", 1000), ("g", 1010), ("g", 990), ("g", 5000), ("g", 5050), ("h", 7))
    found = groups("stratified", trace)
    # the middle of 990, 1000, 1010 is 1000 (position 0); 5025, the median of 5000 and 5050, is
    # as near to both: the earlier kernel (position 3)
    assert found == [Group(0, (0, 1, 2)), Group(3, (3, 4)), Group(5, (5,))]
    assert stated_error_pct("stratified", found, trace) <= 100 * NARROW_COV
    by_position = {f.position: f for f in trace}
    assert found[0].scale(by_position, 2) == 990 / 1000


def test_a_tie_in_the_middle_goes_to_the_earlier_kernel():
    trace = facts(("g", 100), ("g", 102))
    assert groups("stratified", trace) == [Group(0, (0, 1))]


def test_equal_counts_take_the_first_kernel():
    trace = facts(("g", 100), ("g", 100), ("g", 100))
    assert groups("stratified", trace) == [Group(0, (0, 1, 2))]
    assert stated_error_pct("stratified", groups("stratified", trace), trace) == 0.0


def test_real_times_that_vary_get_more_samples_until_the_bound_holds():
    same = facts(*[("g", 100)] * 8, real=[10.0] * 8)
    assert groups("stratified", same) == [Group(0, tuple(range(8)))]
    varied = facts(*[("g", 100)] * 8, real=[10, 10, 10, 10, 30, 30, 30, 31.0])
    found = groups("stratified", varied)
    assert len(found) >= 2
    assert stated_error_pct("stratified", found, varied) <= TARGET_ERROR_PCT
    fast = {p for g in found for p in g.members if varied[p].real_ns == 10}
    assert any(set(g.members) == fast for g in found)  # the fast ones together


def test_sampling_never_loses_or_repeats_a_kernel():
    trace = facts(*[(n, c) for n in "abc" for c in (10, 10, 11, 40, 41, 1000)])
    for method in ("none", "identical", "stratified"):
        found = groups(method, trace)
        members = sorted(p for g in found for p in g.members)
        assert members == list(range(len(trace))), method
        assert all(g.representative in g.members for g in found)
