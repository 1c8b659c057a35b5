"""Error statistics of `cascade compare`."""

from __future__ import annotations

import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cascade_core.timeline.intervals import union_length
from cascade_core.timeline.stats import error_pct, error_summary, percentile


def test_percentile_interpolates_between_ranks():
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0], 95) == pytest.approx(3.85)
    assert percentile([7.0], 95) == 7.0
    with pytest.raises(ValueError):
        percentile([], 50)


@given(st.lists(st.floats(-1e9, 1e9), min_size=1, max_size=50))
def test_p50_is_the_median(values):
    assert percentile(values, 50) == pytest.approx(statistics.median(values), abs=1e-6)


def test_error_summary():
    summary = error_summary([(100.0, 110.0), (200.0, 180.0), (None, 5.0), (50.0, None), (0.0, 1.0)])
    assert summary["count"] == 3  # pairs with both values; a real 0 has no percentage
    assert summary["mean_error"] == pytest.approx((10 - 20 + 1) / 3)
    assert summary["mean_abs_error"] == pytest.approx((10 + 20 + 1) / 3)
    assert summary["mean_error_pct"] == pytest.approx((10 - 10) / 2)
    assert summary["p50_abs_error_pct"] == pytest.approx(10.0)
    assert error_pct(0.0, 1.0) is None and error_pct(100.0, 150.0) == 50.0
    empty = error_summary([])
    assert empty["count"] == 0 and all(v is None for k, v in empty.items() if k != "count")


def test_union_length_counts_overlaps_once():
    assert union_length([(0, 10), (5, 15), (20, 25)]) == 20
    assert union_length([]) == 0
    assert union_length([(0, 10), (2, 3)]) == 10
