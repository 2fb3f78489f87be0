"""Numeric input transforms (signed log1p, robust scaling, piecewise linear) vs numpy oracles."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from beam_prep.codegen.numeric_layers import (
    PiecewiseLinear,
    RobustScaling,
    SignedLog1p,
    edges_from_boundaries,
    numpy_stats,
)

RNG = np.random.default_rng(7)
X = np.concatenate([RNG.lognormal(0, 2, (50, 1)), RNG.normal(0, 3, (50, 1)),
                    np.array([[0.0, -0.0]] * 50)[:, :1]], axis=1).astype("float32")


def test_signed_log1p_matches_numpy():
    got = np.asarray(SignedLog1p()(X))
    np.testing.assert_allclose(got, np.sign(X) * np.log(1.0 + np.abs(X)), rtol=1e-6, atol=1e-7)
    assert got.shape == X.shape


def test_robust_scaling_matches_numpy_and_guards_zero_iqr():
    med = np.median(X, axis=0)
    iqr = np.percentile(X, 75, axis=0) - np.percentile(X, 25, axis=0)
    assert iqr[2] == 0.0  # constant column
    got = np.asarray(RobustScaling(med, iqr)(X))
    want = (X - med) / np.where(iqr > 0, iqr, 1.0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _ple_oracle(x: float, edges: list[float]) -> list[float]:
    """Gorishniy et al. 2022, eq. (1), one value at a time."""
    t_count = len(edges) - 1
    out = []
    for t in range(1, t_count + 1):
        lo, hi = edges[t - 1], edges[t]
        if x < lo and t > 1:
            out.append(0.0)
        elif x >= hi and t < t_count:
            out.append(1.0)
        elif hi == lo:
            out.append(1.0 if x >= lo else 0.0)
        else:
            out.append((x - lo) / (hi - lo))
    return out


@pytest.mark.parametrize("edges", [[0.0, 1.0, 3.0, 7.0], [-2.0, 5.0], [0.0, 1.0, 1.0, 2.0]])
def test_piecewise_linear_matches_paper_formula(edges):
    xs = np.array([-3.0, -2.0, 0.0, 0.5, 1.0, 1.5, 2.9, 3.0, 6.0, 7.0, 11.0], "float32")
    got = np.asarray(PiecewiseLinear([edges])(xs[:, None]))
    assert got.shape == (len(xs), 1, len(edges) - 1)
    want = np.array([_ple_oracle(float(x), edges) for x in xs])
    np.testing.assert_allclose(got[:, 0, :], want, rtol=1e-6, atol=1e-6)


def test_piecewise_linear_per_column_edges_and_rank3_input():
    edges = [[0.0, 1.0, 2.0], [10.0, 20.0, 40.0]]
    x = RNG.uniform(-5, 50, (4, 3, 2)).astype("float32")  # [batch, list, D]
    got = np.asarray(PiecewiseLinear(edges)(x))
    assert got.shape == (4, 3, 2, 2)
    for idx in np.ndindex(4, 3, 2):
        want = _ple_oracle(float(x[idx]), edges[idx[2]])
        np.testing.assert_allclose(got[idx], want, rtol=1e-5, atol=1e-5)


def test_layers_serialise_round_trip():
    for layer in (SignedLog1p(), RobustScaling([1.0, 2.0], [2.0, 0.5]),
                  PiecewiseLinear([[0.0, 1.0, 3.0], [1.0, 2.0, 4.0]])):
        clone = keras.layers.deserialize(keras.layers.serialize(layer))
        x = RNG.normal(0, 2, (5, 2)).astype("float32")
        np.testing.assert_allclose(np.asarray(clone(x)), np.asarray(layer(x)), rtol=1e-6)


def test_numpy_stats_and_edges_match_numpy_quantiles():
    s = numpy_stats(X, bins=4)
    np.testing.assert_allclose(s["median"], np.percentile(X, 50, axis=0), rtol=1e-6)
    np.testing.assert_allclose(s["edges"], np.percentile(X, [0, 25, 50, 75, 100], axis=0).T,
                               rtol=1e-6)
    assert edges_from_boundaries([0.5, 1.5, 9.0], 0.0, 2.0) == [0.0, 0.5, 1.5, 2.0]
    assert edges_from_boundaries([], 3.0, 3.0) == [3.0, 4.0]


@pytest.mark.parametrize("make,match", [
    (lambda: PiecewiseLinear([[1.0, 0.0]]), "non-decreasing"),
    (lambda: PiecewiseLinear([1.0, 2.0]), r"D rows of T \+ 1"),
    (lambda: RobustScaling([0.0, 1.0], [1.0]), "same length"),
    (lambda: RobustScaling([np.nan], [1.0]), "finite"),
])
def test_bad_statistics_are_refused(make, match):
    # ValueError (as Keras' own argument checks): the generated module renders these classes.
    with pytest.raises(ValueError, match=match):
        make()
