"""Property tests of :func:`beam_prep.analyzers.exact_sums.exact_sums` against ``Fraction``.

Oracle: Python's ``fractions.Fraction`` on every float64 input (exact rational arithmetic),
independent of the vectorised paths. The inputs mix the shapes that pick different paths
(small and large integers, float32-exact values, ordinary doubles, values near the float64
limits, subnormals, zeros), in arrays long enough to cross chunk boundaries, so that a path
chosen for one chunk or for the whole array is checked against the same oracle.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from beam_prep.analyzers import exact_sums as es
from tests.fuzzing import examples

FINITE = st.floats(allow_nan=False, allow_infinity=False)
FLOAT32 = st.floats(allow_nan=False, allow_infinity=False, width=32)
INTEGERS = st.one_of(st.integers(-(2**24), 2**24), st.integers(-(2**40), 2**40),
                     st.integers(-(2**53), 2**53)).map(float)
SCALED = st.builds(math.ldexp, st.floats(-1.0, 1.0), st.integers(-1074, 1023))  # any exponent
VALUE = st.one_of(FINITE, FLOAT32, INTEGERS, SCALED, st.sampled_from([0.0, -0.0, 5e-324]))
SETTINGS = settings(max_examples=examples(150), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _oracle(values: list[float], repeats: int = 1) -> tuple[Fraction, Fraction]:
    xs = [Fraction(v) for v in values]
    return (repeats * sum(xs, Fraction(0)), repeats * sum((x * x for x in xs), Fraction(0)))


def _as_fractions(total: int, total_sq: int) -> tuple[Fraction, Fraction]:
    return Fraction(total, 1 << es.SUM_SHIFT), Fraction(total_sq, 1 << es.SQUARE_SHIFT)


@SETTINGS
@given(st.lists(VALUE, max_size=300))
def test_any_finite_values_sum_exactly(values):
    assert _as_fractions(*es.exact_sums(np.array(values, dtype=np.float64))) == _oracle(values)


@SETTINGS
@given(st.lists(st.one_of(FLOAT32, INTEGERS), min_size=1, max_size=40),
       st.integers(1, 3 * es.CHUNK))
def test_long_arrays_across_chunks_sum_exactly(base, length):
    # The base values tiled to ``length`` (not a multiple of CHUNK in general): Σ = k·Σbase
    # for the whole tiles plus the oracle of the remainder.
    whole, rest = divmod(length, len(base))
    values = np.array(base * whole + base[:rest], dtype=np.float64)
    want_whole, want_whole_sq = _oracle(base, whole)
    want_rest, want_rest_sq = _oracle(base[:rest])
    got = _as_fractions(*es.exact_sums(values))
    assert got == (want_whole + want_rest, want_whole_sq + want_rest_sq)


@SETTINGS
@given(st.lists(VALUE, min_size=1, max_size=30), st.lists(VALUE, min_size=1, max_size=30),
       st.integers(0, 2 * es.CHUNK))
def test_mixed_chunks_sum_exactly(head, tail, pad):
    # ``pad`` small integers between two arbitrary groups move them into different chunks,
    # so one chunk may take the integer path and its neighbour another one.
    values = head + [7.0] * pad + tail
    got = _as_fractions(*es.exact_sums(np.array(values, dtype=np.float64)))
    want_head, want_head_sq = _oracle(head)
    want_tail, want_tail_sq = _oracle(tail)
    assert got == (want_head + want_tail + 7 * pad, want_head_sq + want_tail_sq + 49 * pad)


def test_largest_integers_of_the_integer_path_do_not_overflow():
    # Python integers are the oracle: no int64 wrap-around at the integer path's bounds.
    for magnitude in (2**23 - 1, 2**23, 2**25 - 1, 2**25, 2**26, 2**31 - 1, 2**31, 2**40):
        for sign in (1, -1):
            values = np.full(5 * es.CHUNK + 3, float(sign * magnitude))
            total, total_sq = es.exact_sums(values)
            n = values.size
            assert total == (n * sign * magnitude) << es.SUM_SHIFT
            assert total_sq == (n * magnitude * magnitude) << es.SQUARE_SHIFT


def test_float32_values_as_float64_sum_exactly():
    rng = np.random.default_rng(3)
    values = np.concatenate([rng.lognormal(0, 4, 20000), rng.normal(0, 1e-3, 5000)])
    values = values.astype(np.float32).astype(np.float64)
    assert _as_fractions(*es.exact_sums(values)) == _oracle(values.tolist())


def test_exact_sum_equals_the_first_of_exact_sums() -> None:
    from beam_prep.analyzers.exact_sums import exact_sum

    rng = np.random.default_rng(9)
    for values in (rng.integers(-1000, 1000, 20000).astype(np.float64),
                   rng.lognormal(0, 5, 20000) * rng.choice([-1, 1], 20000),
                   np.concatenate([rng.normal(size=9000) * 1e300, rng.normal(size=9000) * 1e-310,
                                   np.zeros(100)]),
                   np.zeros(0)):
        assert exact_sum(values) == es.exact_sums(values)[0]
