"""Numeric min/max of a column holding both 0.0 and -0.0 do not depend on batches or splits.

``np.min`` and Python's ``min`` return either zero when 0.0 and -0.0 tie, depending on
their order, and JSON keeps the sign (``-0.0``). So the manifest's ``min``/``max`` could
change with ``--batch_size``, ``--input_split_bytes`` or the merge order. The oracle is
exact arithmetic: ``float(Fraction)`` of the smallest / largest value (zero is ``0.0``).
"""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

import numpy as np
import pytest

from beam_prep.analyzers import numeric as num

CASES = {
    "min_is_zero": [0.0, -0.0, 2.0, -0.0, 0.0, 5.0],
    "max_is_zero": [-0.0, -3.0, 0.0, -1.0, -0.0],
    "only_zeros": [-0.0, 0.0, -0.0],
    "only_negative_zeros": [-0.0, -0.0],
}


def _cuts(n: int):
    """Every split of ``range(n)`` into consecutive non-empty batches."""
    for mask in itertools.product((False, True), repeat=n - 1):
        edges = [0] + [i + 1 for i, cut in enumerate(mask) if cut] + [n]
        yield list(zip(edges[:-1], edges[1:]))


def _oracle(values: list[float]) -> tuple[str, str]:
    exact = [Fraction(v) for v in values]
    return json.dumps(float(min(exact))), json.dumps(float(max(exact)))


@pytest.mark.parametrize("name", sorted(CASES))
def test_min_and_max_are_the_same_bytes_for_every_batching_and_merge_order(name):
    values = CASES[name]
    want = _oracle(values)
    for cut in _cuts(len(values)):
        acc = num.NumericAccumulator(None)
        for a, b in cut:  # one split, batch by batch
            acc.add(np.array(values[a:b]), 0)
        m = acc.result().moments
        assert (json.dumps(m.minimum), json.dumps(m.maximum)) == want, cut
        splits = [num.NumericAccumulator(None) for _ in cut]  # one split per batch
        for s, (a, b) in zip(splits, cut):
            s.add(np.array(values[a:b]), 0)
        for order in (splits, splits[::-1]):
            merged = num.merge_partials([s.result() for s in order]).moments
            assert (json.dumps(merged.minimum), json.dumps(merged.maximum)) == want, (cut, order)


def test_stored_moments_with_a_negative_zero_merge_to_the_same_bytes():
    """Moments rebuilt from stored fields (as the cache does) keep the convention."""
    negative = num.Moments(1, 0, 0, -0.0, -0.0)
    positive = num.Moments.of(np.array([0.0]))
    for merged in (negative.merge(positive), positive.merge(negative), negative):
        assert (json.dumps(merged.minimum), json.dumps(merged.maximum)) == ("0.0", "0.0")
