"""Contract of KeyStatsCombineFn without a pipeline: correctness vs exact Fractions, sharded
add + merge in several orders, pickling round trip, empty input; the cache's Arrow form."""

from __future__ import annotations

import pickle
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest

from beam_prep.analyzers.per_key import stats as pks
from beam_prep.analyzers.per_key.pipeline import KeyStatsCombineFn

CASES = {
    "prices": lambda rng, n: np.round(rng.lognormal(2, 1, n), 2),
    "integers": lambda rng, n: rng.integers(-1000, 1000, n).astype(float),
    "wide range": lambda rng, n: rng.lognormal(0, 30, n) * rng.choice([-1, 1], n),
    "extremes": lambda rng, n: rng.choice([5e-324, 1e-300, 1e300, -1.7e308, 0.0, -0.0, 2.5,
                                           np.nan, np.inf], n),
    "float32 data": lambda rng, n: rng.normal(0, 1, n).astype(np.float32).astype(float),
}


def _batches(case: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    n = 4000
    keys = [f"k{i}" if i else "" for i in rng.integers(0, 60, n)]
    values = CASES[case](rng, n)
    sizes = rng.integers(1, 700, 40)
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    bounds = bounds[bounds < n].tolist() + [n]
    return [(pa.array(keys[a:b]), values[a:b]) for a, b in zip(bounds, bounds[1:])], keys, values


def _exact(keys, values):
    out = {}
    for k, v in zip(keys, values.tolist()):
        if k and np.isfinite(v):
            c, s, s2, lo, hi = out.get(k, (0, Fraction(0), Fraction(0), np.inf, -np.inf))
            out[k] = (c + 1, s + Fraction(v), s2 + Fraction(v) ** 2, min(lo, v), max(hi, v))
    return out


def _as_dict(stats: pks.KeyStats) -> dict:
    out = {}
    for i, k in enumerate(stats.keys.to_pylist()):
        m = pks.moments(stats, i)
        out[k] = (m.count, Fraction(m.total, 1 << 1074), Fraction(m.total_sq, 1 << 2148),
                  m.minimum, m.maximum)
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_sharded_adds_and_merges_in_any_order_give_the_exact_result(case):
    batches, keys, values = _batches(case)
    fn = KeyStatsCombineFn()
    want = _exact(keys, values)
    results = []
    for order_seed in range(3):
        rng = np.random.default_rng(order_seed)
        items = [pks.batch_stats(k, v) for k, v in batches]
        rng.shuffle(items)
        shards = np.array_split(np.arange(len(items)), 1 + order_seed * 2)
        accs = []
        for shard in shards:
            acc = fn.create_accumulator()
            for i in shard:
                acc = fn.add_input(acc, items[i])
            accs.append(pickle.loads(pickle.dumps(acc)))  # accumulators travel pickled
        rng.shuffle(accs)
        out = fn.extract_output(fn.merge_accumulators(accs))
        assert out.keys.to_pylist() == sorted(want, key=lambda s: s.encode())
        assert _as_dict(out) == want
        results.append(out)
    for other in results[1:]:  # identical lines whatever the order
        assert pks.means_and_variances(other) == pks.means_and_variances(results[0])


def test_empty_input_and_rows_without_a_key_or_a_finite_value():
    fn = KeyStatsCombineFn()
    assert len(fn.extract_output(fn.create_accumulator())) == 0
    stats = pks.batch_stats(pa.array(["", None, "a"]), np.array([1.0, 2.0, np.nan]))
    assert len(stats) == 0


def test_arrow_form_round_trips_exactly():
    batches, _, _ = _batches("extremes", seed=4)
    stats = pks.merge([pks.batch_stats(k, v) for k, v in batches])
    back = pks.from_table(pks.to_table(stats))
    assert back.keys.equals(stats.keys)
    assert _as_dict(back) == _as_dict(stats)
