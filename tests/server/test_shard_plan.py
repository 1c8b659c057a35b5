"""Issue 23: shard planning, costs and the merge, as pure functions."""

from __future__ import annotations

from pathlib import Path

import pytest

from cascade_core.models import KernelStat, ShardInfo
from cascade_core.shard_merge import mark_warmup, merge_kernels, owned, replica_progress
from cascade_core.shard_plan import (
    ShardPlanError,
    expected_speedup,
    measured_error,
    plan_shards,
    simulated_costs,
)
from cascade_server.services.shard_costs import kernel_costs
from tests.conftest import ready_trace, sim_summary

# The demo trace's warp instructions per kernel (stats.csv of tinyformer-step-sm70).
DEMO = [1728, 3904, 119424, 2304, 43264, 15104, 31904, 40064, 1088, 3904, 159232, 17152, 157568, 1088, 3904]


def ranges(plan):
    return [(s.first, s.last, s.warmup) for s in plan]


def test_ranges_are_contiguous_cover_every_kernel_and_balance_cost_not_count():
    plan = plan_shards(DEMO, 3, 1)
    assert [s.index for s in plan] == [0, 1, 2] and all(s.count == 3 for s in plan)
    assert plan[0].first == 0 and plan[-1].last == len(DEMO) - 1
    assert all(a.last + 1 == b.first for a, b in zip(plan, plan[1:]))
    assert ranges(plan)[0][2] == 0 and all(s.warmup == 1 for s in plan[1:])
    counts = [s.kernels for s in plan]
    assert len(set(counts)) > 1  # not 5/5/5: the GEMMs weigh more than the layernorms
    # No contiguous split does better on the costliest shard (brute force over every cut).
    best = min(
        max(simulated_costs(DEMO, p))
        for p in (_plan_from_cuts(a, b) for a in range(1, 14) for b in range(a + 1, 15))
    )
    assert max(simulated_costs(DEMO, plan)) == best
    assert 2.0 < expected_speedup(DEMO, plan) <= 3.0


def _plan_from_cuts(a, b):
    from cascade_core.shard_plan import ShardRange

    bounds = [(0, a), (a, b), (b, 15)]
    return [ShardRange(i, 3, s, e - 1, min(1, s)) for i, (s, e) in enumerate(bounds)]


def test_warm_up_cost_counts_and_the_first_shard_has_none():
    costs = [100, 1, 1, 1, 1, 1, 100]
    cold = plan_shards(costs, 2, 0)
    warm = plan_shards(costs, 2, 3)
    assert ranges(cold) == [(0, 3, 0), (4, 6, 0)] or ranges(cold) == [(0, 2, 0), (3, 6, 0)]
    assert warm[0].warmup == 0 and warm[1].warmup == min(3, warm[1].first)
    assert max(simulated_costs(costs, warm)) <= 105


def test_as_many_shards_as_kernels_and_one_shard():
    assert ranges(plan_shards([5, 5, 5], 3, 1)) == [(0, 0, 0), (1, 1, 1), (2, 2, 1)]
    assert ranges(plan_shards([5, 5, 5], 1, 1)) == [(0, 2, 0)]


def test_unknown_costs_weigh_the_mean_and_all_unknown_means_count():
    assert ranges(plan_shards([None, None, None, None], 2, 0)) == [(0, 1, 0), (2, 3, 0)]
    assert ranges(plan_shards([10, None, 10, 10], 2, 0)) == [(0, 1, 0), (2, 3, 0)]


@pytest.mark.parametrize(
    "costs, shards, warmup, words",
    [
        ([1], 2, 1, "only one kernel"),
        ([1, 2, 3], 4, 1, "3 kernels, fewer than the 4 shards"),
        ([], 1, 1, "no kernels"),
        ([1, 2], 0, 1, "at least 1"),
        ([1, 2], 2, -1, "must not be negative"),
    ],
)
def test_impossible_plans_are_sentences(costs, shards, warmup, words):
    with pytest.raises(ShardPlanError, match=words):
        plan_shards(costs, shards, warmup)


def test_a_warm_up_that_leaves_no_speed_up_is_refused_with_a_sentence():
    """Issue 32: 3 shards of the demo trace each after 1,000,000 warm-up kernels simulate about
    the whole trace each (expected speed-up about 1): refused, not run for nothing."""
    with pytest.raises(ShardPlanError) as refused:
        plan_shards(DEMO, 3, 1_000_000)
    words = str(refused.value)
    assert words.startswith("1000000 warm-up kernels leave no speed-up: the costliest shard")
    assert "without warm-up" in words and words.endswith("use fewer warm-up kernels or fewer shards")
    assert expected_speedup(DEMO, plan_shards(DEMO, 3, 2)) > 1.1  # a few warm-up kernels are fine


def test_a_trace_that_does_not_split_well_is_not_the_warm_ups_fault():
    costs = [1000, 1, 1, 1]  # one kernel costs about all: no split is faster, warm-up or not
    assert len(plan_shards(costs, 2, 3)) == 2  # not refused
    assert expected_speedup(costs, plan_shards(costs, 2, 0)) < 1.1


def test_the_measured_error_figure():
    assert "1.99%" in measured_error(1) and "0.17%" in measured_error(4)
    assert "3.02%" in measured_error(0)


def test_costs_are_instructions_when_every_kernel_has_them_else_trace_sizes(tmp_path: Path):
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "kernelslist.g").write_text(
        "MemcpyHtoD,0x1,256\nkernel-2.traceg\nMemcpyHtoD,0x2,8\nkernel-1.traceg\n"
    )
    (traces / "kernel-1.traceg").write_text("x" * 10)
    (traces / "kernel-2.traceg").write_text("x" * 30)
    trace = ready_trace(kernels=2)
    trace.kernels[0].instructions, trace.kernels[1].instructions = 7, 9
    assert kernel_costs(tmp_path, trace) == ([9, 7], "instructions")  # in run order: kernel-2 first
    trace.kernels[0].instructions = None
    assert kernel_costs(tmp_path, trace) == ([30, 10], "trace sizes")


def _sim(sim_id, replica, shard=None, state="running", done=0, total=0):
    return sim_summary(sim_id, replica, state, done, total, shard=shard)


def _k(sim_id, index, cycles=10, warmup=False):
    return KernelStat(
        sim_id=sim_id, kernel_index=index, kernel_name=f"k{index}", gpu_sim_cycle=cycles, warmup=warmup
    )


def test_merge_gives_each_kernel_once_from_its_owner():
    a = _sim("sim-a", 0, ShardInfo(index=0, count=2, kernel_first=0, kernel_last=2, warmup_kernels=0))
    b = _sim("sim-b", 0, ShardInfo(index=1, count=2, kernel_first=3, kernel_last=4, warmup_kernels=1))
    whole = _sim("sim-c", 1)
    kernels = [
        _k("sim-b", 2),
        _k("sim-b", 3),
        _k("sim-b", 4),
        _k("sim-a", 0),
        _k("sim-a", 1),
        _k("sim-a", 2),
        _k("sim-c", 1),
        _k("sim-c", 0),
        _k("sim-x", 0),
    ]
    merged = merge_kernels([b, a, whole], kernels)
    assert [(k.sim_id, k.kernel_index) for k in merged] == [
        ("sim-a", 0),
        ("sim-a", 1),
        ("sim-a", 2),
        ("sim-b", 3),
        ("sim-b", 4),
        ("sim-c", 0),
        ("sim-c", 1),
    ]
    marked = mark_warmup(b, [_k("sim-b", 2), _k("sim-b", 3)])
    assert [k.warmup for k in marked] == [True, False]
    assert owned(b, marked) == [marked[1]]
    assert owned(whole, [_k("sim-c", 0)]) == [_k("sim-c", 0)]


def test_a_replica_succeeds_only_when_every_shard_does():
    shards = [
        _sim(
            "a",
            0,
            ShardInfo(index=0, count=2, kernel_first=0, kernel_last=2, warmup_kernels=0),
            "succeeded",
            3,
            3,
        ),
        _sim(
            "b",
            0,
            ShardInfo(index=1, count=2, kernel_first=3, kernel_last=4, warmup_kernels=1),
            "failed",
            1,
            2,
        ),
    ]
    (progress,) = replica_progress(shards)
    assert (progress.state, progress.kernels_done, progress.kernels_total, progress.shards) == (
        "partial",
        4,
        5,
        2,
    )


def test_a_sharded_replica_reads_as_one_sim_of_the_whole_trace():
    from cascade_core.models import SimMetrics
    from cascade_core.shard_merge import replica_sims

    a = _sim(
        "a",
        0,
        ShardInfo(index=0, count=2, kernel_first=0, kernel_last=2, warmup_kernels=0),
        "succeeded",
        3,
        3,
    )
    b = _sim(
        "b", 0, ShardInfo(index=1, count=2, kernel_first=3, kernel_last=4, warmup_kernels=1), "running", 1, 2
    )
    a.latest, b.latest = (
        SimMetrics(gpu_tot_sim_cycle=100, gpu_tot_sim_insn=50),
        SimMetrics(gpu_tot_sim_cycle=60),
    )
    whole = _sim("c", 1, None, "succeeded", 5, 5)
    merged, owner = replica_sims({"a": a, "b": b, "c": whole})
    assert owner == {"a": "a", "b": "a", "c": "c"} and merged["c"] is whole
    one = merged["a"]
    assert (one.state, one.kernels_done, one.kernels_total, one.shard) == ("running", 4, 5, None)
    assert one.latest.gpu_tot_sim_cycle == 160  # without kernels: the shards' own totals
    merged, _ = replica_sims(
        {"a": a, "b": b}, [_k("a", 0, 5), _k("b", 2, 7), _k("b", 3, 11), _k("b", 2, 7, True)]
    )
    assert merged["a"].latest.gpu_tot_sim_cycle == 16  # the owned kernels only, warm-up left out
