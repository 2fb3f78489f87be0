"""compare_numeric and numeric flags on hand-written statistics (values worked out by hand)."""

from __future__ import annotations

import math

import pytest

from beam_prep.diff.compare import numeric_flags
from beam_prep.diff.numeric import compare_numeric
from beam_prep.diff.thresholds import DiffThresholds
from beam_prep.errors import SpecError

BIG = 1.7976931348623157e308


def _stats(**kw):
    base = {"count": 100, "missing_count": 0, "nan_count": 0, "infinite_count": 0,
            "mean": 10.0, "variance": 4.0, "min": 0.0, "max": 20.0,
            "boundaries": [8.0, 10.0, 12.0]}
    return {**base, **kw}


def test_shifts_in_old_std_units():
    # OLD std 2; NEW mean 13 (+1.5 std), std 3 (+0.5 std), boundaries moved by at most 3.
    d = compare_numeric(_stats(), _stats(mean=13.0, variance=9.0,
                                         boundaries=[11.0, 12.0, 13.0]))
    assert (d.mean_shift, d.std_shift, d.boundary_shift) == (1.5, 0.5, 1.5)
    # OLD boundary 8 sits before NEW's first (0), 10 too (0, moved 1), 12 at 1 (moved 1)
    assert d.rank_shift == 1 and not d.unscaled_change
    assert [f.metric for f in numeric_flags("p", d, DiffThresholds())] == [
        "mean_shift", "boundary_shift"]       # std_shift 0.5 is not > 0.5


def test_rate_changes_per_row():
    # OLD 100 rows, none missing; NEW 100 finite + 20 missing + 5 NaN + 25 inf = 150 rows
    d = compare_numeric(_stats(), _stats(missing_count=20, nan_count=5, infinite_count=25))
    assert d.old_rows == 100 and d.new_rows == 150
    assert d.missing_rate_change == pytest.approx(20 / 150)
    assert d.nan_rate_change == pytest.approx(5 / 150)
    assert d.infinite_rate_change == pytest.approx(25 / 150)
    flags = numeric_flags("p", d, DiffThresholds(max_rate_change=0.1))
    assert [f.metric for f in flags] == ["missing_rate_change", "infinite_rate_change"]
    assert "p: missing rate change 0.1333 > 0.1" == flags[0].message


def test_null_statistics_give_no_shift():
    empty = _stats(count=0, missing_count=50, mean=None, variance=None, min=None, max=None,
                   boundaries=[])
    d = compare_numeric(empty, _stats())
    assert d.mean_shift is None and d.std_shift is None and d.boundary_shift is None
    assert d.old_mean is None and d.new_mean == 10.0 and not d.unscaled_change
    assert d.missing_rate_change == -1.0
    d = compare_numeric(empty, empty)
    assert d.missing_rate_change == 0.0 and numeric_flags("p", d, DiffThresholds()) == ()


def test_zero_old_std_is_an_unscaled_change():
    const = _stats(mean=5.0, variance=0.0, boundaries=[5.0, 5.0, 5.0])
    assert not compare_numeric(const, const).unscaled_change
    d = compare_numeric(const, _stats(mean=6.0, variance=0.0, boundaries=[5.0, 5.0, 5.0]))
    assert d.mean_shift is None and d.unscaled_change
    assert [f.metric for f in numeric_flags("p", d, DiffThresholds())] == ["unscaled_change"]


def test_infinite_boundaries_compare_without_overflow():
    old = _stats(boundaries=[-BIG, 10.0, BIG])
    assert compare_numeric(old, old).boundary_shift == 0.0
    d = compare_numeric(old, _stats(boundaries=[10.0, 10.0, BIG]))
    assert d.boundary_shift == BIG / 2 and not d.unscaled_change   # (10 + BIG) rounds to BIG
    d = compare_numeric(old, _stats(boundaries=[BIG, 10.0, BIG]))
    assert d.boundary_shift is None and d.unscaled_change          # BIG - (-BIG) overflows
    assert [f.metric for f in numeric_flags("p", d, DiffThresholds())] == ["unscaled_change"]


def test_different_bucket_counts_skip_the_boundary_shift():
    d = compare_numeric(_stats(), _stats(boundaries=[9.0, 11.0]))
    assert d.boundary_shift is None and d.rank_shift is None


@pytest.mark.parametrize("field,value", [("max_jsd", -0.1), ("max_mean_shift", math.nan),
                                         ("top_k", 0), ("top_n", 1.5), ("max_jsd", "x")])
def test_thresholds_are_validated(field, value):
    with pytest.raises(SpecError, match=rf"`{field}` must be .*Received: {field}="):
        DiffThresholds(**{field: value})


def test_quartile_shift_in_old_std_units_and_flagged():
    # OLD std 2; the median moves 10 -> 13 (1.5 std), q25/q75 by 1 (0.5 std).
    old = _stats(quartiles=[8.0, 10.0, 12.0])
    d = compare_numeric(old, _stats(quartiles=[9.0, 13.0, 13.0]))
    assert d.quartile_shift == 1.5 and d.old_quartiles == [8.0, 10.0, 12.0]
    flags = numeric_flags("p", d, DiffThresholds())
    assert [f.metric for f in flags] == ["quartile_shift"]
    assert flags[0].message == ("p: largest quartile shift in OLD std units 1.5 > 0.5 "
                                "(median 10 -> 13)")
    assert compare_numeric(old, old).quartile_shift == 0.0
    # Not recorded on one side (another scaling, or no finite value): no shift, no flag.
    assert compare_numeric(_stats(), _stats(quartiles=[1.0, 2.0, 3.0])).quartile_shift is None
    assert compare_numeric(old, _stats(quartiles=None)).quartile_shift is None
    const = _stats(variance=0.0, boundaries=[5.0, 5.0, 5.0], quartiles=[5.0, 5.0, 5.0])
    d = compare_numeric(const, dict(const, quartiles=[5.0, 6.0, 6.0]))
    assert d.quartile_shift is None and d.unscaled_change
