"""Contract tests of the numeric partials: moments, canonical merge, quantile boundaries."""

from __future__ import annotations

import itertools
import math
import pickle
from fractions import Fraction

import numpy as np
import pytest

from beam_prep.analyzers import numeric as num

RNG = np.random.default_rng(42)
CASES = {
    "normal": RNG.normal(3.0, 2.0, 3000),
    "heavy_tail": RNG.lognormal(0.0, 2.5, 3000),
    "large_offset": 1e9 + RNG.normal(0.0, 1.0, 3000),  # where summing squares would fail
    "constant": np.full(100, 7.25),
    "single": np.array([-1.5]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_sharded_moments_match_numpy_population_statistics(name):
    values = CASES[name]
    for shards in (1, 2, 5):
        parts = [num.Moments.of(chunk) for chunk in np.array_split(values, shards)]
        for order in list(itertools.permutations(range(len(parts))))[:6]:
            merged = num.Moments()
            for i in order:
                merged = merged.merge(parts[i])
            assert merged.count == values.size
            assert merged.mean == pytest.approx(np.mean(values), rel=1e-12, abs=1e-12)
            # Chan merges of float64 means near 1e9 lose ~1e-8 relative; TFT parity needs 1e-6.
            assert merged.variance == pytest.approx(np.var(values), rel=1e-7, abs=1e-12)
            assert (merged.minimum, merged.maximum) == (values.min(), values.max())


def test_empty_moments_and_empty_partials():
    assert num.Moments().merge(num.Moments()).count == 0
    fn = num.CanonicalMergeFn()
    assert fn.extract_output(fn.create_accumulator()) == {}
    assert num.boundaries(num.NumericPartial(), 4) == []


def _split_partials(values: np.ndarray, n_splits: int, epsilon: float):
    out = []
    for i, chunk in enumerate(np.array_split(values, n_splits)):
        acc = num.NumericAccumulator(epsilon)
        for batch in np.array_split(chunk, 3):
            acc.add(batch, missing=1)
        out.append((f"split-{i:03d}", {"x": acc.result()}))
    return out


def test_canonical_merge_is_bitwise_identical_whatever_the_grouping():
    values = CASES["heavy_tail"]
    elements = _split_partials(values, 6, 0.01)
    fn = num.CanonicalMergeFn()
    results = set()
    for perm in [elements, elements[::-1], elements[2:] + elements[:2]]:
        # Two different groupings of the accumulators, merged in different orders.
        a = fn.create_accumulator()
        for e in perm[:3]:
            a = fn.add_input(a, e)
        b = fn.create_accumulator()
        for e in perm[3:]:
            b = fn.add_input(b, e)
        a, b = pickle.loads(pickle.dumps(a)), pickle.loads(pickle.dumps(b))
        out = fn.extract_output(fn.merge_accumulators([b, a]))["x"]
        results.add((out.moments, out.missing, tuple(num.boundaries(out, 10))))
    assert len(results) == 1
    (moments, missing, _), = results
    assert missing == 6 * 3 and moments.count == values.size


def test_nan_and_inf_are_counted_not_averaged():
    acc = num.NumericAccumulator(0.01)
    acc.add(np.array([1.0, np.nan, 3.0, np.inf, -np.inf]), missing=2)
    p = acc.result()
    assert (p.moments.count, p.moments.mean, p.nan, p.infinite, p.missing) == (2, 2.0, 1, 2, 2)


@pytest.mark.parametrize("num_buckets", [2, 4, 10, 100])
def test_boundaries_are_within_epsilon_rank_error(num_buckets):
    values = np.concatenate([CASES["heavy_tail"], RNG.integers(0, 5, 4000).astype(float)])
    epsilon = min(1.0 / num_buckets, 0.01)
    merged = num.CanonicalMergeFn().extract_output(_split_partials(values, 4, epsilon))["x"]
    got = num.boundaries(merged, num_buckets)
    assert len(got) == num_buckets - 1
    assert got == sorted(got)
    ordered = np.sort(values)
    n = values.size
    for i, b in enumerate(got, start=1):
        target = i / num_buckets
        lo = np.searchsorted(ordered, b, side="left") / n
        hi = np.searchsorted(ordered, b, side="right") / n
        # b is a valid epsilon-quantile if its rank interval is within epsilon of the target.
        assert lo - epsilon <= target <= hi + epsilon, (i, b, lo, hi, target)


def test_sorted_runs_counts_each_distinct_value_and_merges_signed_zeros():
    values = np.array([3.0, -0.0, 1.0, 3.0, 0.0, np.inf, 3.0, 1.0])
    distinct, counts = num.sorted_runs(values)
    assert distinct.tolist() == [0.0, 1.0, 3.0, np.inf]
    assert not np.signbit(distinct).any()
    assert counts.tolist() == [2.0, 2.0, 3.0, 1.0]
    spread = np.array([5.0, -0.0, 2.0, 7.0])
    ordered, none = num.sorted_runs(spread)
    assert none is None
    assert ordered.tolist() == [0.0, 2.0, 5.0, 7.0] and not np.signbit(ordered).any()


@pytest.mark.parametrize("num_buckets", [4, 100])
def test_boundaries_from_weighted_repeats_are_within_epsilon_rank_error(num_buckets):
    # Integer counts with a heavy tail repeat a few values: batches go to the sketch as
    # (distinct value, count) pairs. The epsilon guarantee must hold all the same.
    values = np.floor(RNG.pareto(1.1, 60000) * 5).astype(float)
    assert num.sorted_runs(values[:20000])[1] is not None  # the weighted path is taken
    epsilon = min(1.0 / num_buckets, 0.01)
    merged = num.CanonicalMergeFn().extract_output(_split_partials(values, 3, epsilon))["x"]
    got = num.boundaries(merged, num_buckets)
    ordered = np.sort(values)
    for i, b in enumerate(got, start=1):
        target = i / num_buckets
        lo = np.searchsorted(ordered, b, side="left") / values.size
        hi = np.searchsorted(ordered, b, side="right") / values.size
        assert lo - epsilon <= target <= hi + epsilon, (i, b, lo, hi, target)


# Extreme magnitudes: the oracle is exact rational arithmetic (fractions), not numpy, whose
# float64 sums overflow on these inputs.
def _exact_mean_variance(values: np.ndarray) -> tuple[Fraction, Fraction]:
    xs = [Fraction(float(v)) for v in values]
    mean = sum(xs, Fraction(0)) / len(xs)
    return mean, sum(((x - mean) ** 2 for x in xs), Fraction(0)) / len(xs)


def _as_float(x: Fraction) -> float:
    try:
        return float(x)
    except OverflowError:
        return math.inf


EXTREME = {
    "near_max_same_sign": np.array([1e308, 1.5e308, 1.7e308, 1.2e308] * 25),
    "near_max_both_signs": np.array([1e308, 1e308, -1e308, 1e308]),
    "max_float": np.array([np.finfo(np.float64).max] * 7 + [0.0]),
    # Variance ~1.7e308 fits; the sum of squared deviations (~3.4e311) does not.
    "variance_near_max": np.array([1.3e154, -1.3e154] * 1000),
    "subnormal": np.array([1e-310, 3e-310, 2e-310, 5e-324]),
    "mixed_scales": np.concatenate([RNG.normal(0.0, 1.0, 500), [1e150, -3e149]]),
}


@pytest.mark.parametrize("name", sorted(EXTREME))
def test_moments_of_extreme_magnitudes_match_exact_arithmetic(name):
    values = EXTREME[name]
    exact_mean, exact_var = _exact_mean_variance(values)
    for shards in (1, 3, 7):
        parts = [num.Moments.of(chunk) for chunk in np.array_split(values, shards)]
        for order in list(itertools.permutations(range(len(parts))))[:4]:
            merged = num.Moments()
            for i in order:
                merged = merged.merge(parts[i])
            assert merged.count == values.size
            assert math.isfinite(merged.mean)
            # A mean that cancels to ~0 is only defined up to rounding of the largest |x|.
            scale = float(np.abs(values).max())
            assert merged.mean == pytest.approx(float(exact_mean), rel=1e-12,
                                                abs=max(1e-15 * scale, 1e-323))
            assert merged.minimum <= merged.mean <= merged.maximum
            expected_var = _as_float(exact_var)
            if math.isinf(expected_var):
                assert merged.variance == math.inf
            else:
                assert merged.variance == pytest.approx(expected_var, rel=1e-12, abs=1e-323)


def test_variance_beyond_float64_is_inf_and_the_mean_is_still_exact():
    m = num.Moments.of(np.array([1e308, -1e308]))
    assert (m.mean, m.variance) == (0.0, math.inf)
    acc = num.NumericAccumulator(None)
    for v in (1e308, 1e308, -1e308, 1e308):
        acc.add(np.array([v]), missing=0)
    assert acc.result().moments.mean == 5e307  # (3 - 1) * 1e308 / 4, exact
