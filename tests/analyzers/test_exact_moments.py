"""Numeric moments are exact, so they do not depend on how the input was split.

Oracle: Python's ``fractions.Fraction`` (exact rational arithmetic on the float64 inputs),
rounded once with ``float()``. Before the exact sums, a Chan merge of float64 partial moments
gave e.g. mean 37.370034 for one partition of the values below and 37.370034000000004 for
another, so ``--input_split_bytes`` changed the manifest's last bits.
"""

from __future__ import annotations

import json
import random
from fractions import Fraction

import numpy as np
import pytest

from beam_prep.analyzers import exact_sums as es
from beam_prep.analyzers.numeric import Moments

RNG = np.random.default_rng(7)
CASES = {
    "small_integers": RNG.integers(-1000, 1000, 20000).astype(float),
    "big_integers": RNG.integers(-(2**60), 2**60, 3000).astype(float),
    "prices": RNG.normal(37.3, 11.1, 20000).round(2),
    "lognormal": RNG.lognormal(0.0, 5.0, 20000),
    "near_float_path_edges": np.concatenate([RNG.normal(0, 1, 500) * 2.0**499,
                                             RNG.normal(0, 1, 500) * 2.0**-470]),
    "huge_and_tiny": np.concatenate([RNG.normal(0, 1, 3000) * 1e300,
                                     RNG.normal(0, 1, 3000) * 1e-300]),
    "subnormal": np.array([5e-324, -5e-324, 2.2e-310, 0.0, -0.0, 1e-320]),
    "float64_max": np.array([1.7976931348623157e308, -1.7976931348623157e308, 1.0]),
}


def _exact(values: np.ndarray) -> tuple[Fraction, Fraction]:
    xs = [Fraction(v) for v in values.tolist()]
    return sum(xs, Fraction(0)), sum((x * x for x in xs), Fraction(0))


@pytest.mark.parametrize("name", sorted(CASES))
def test_exact_sums_equal_rational_arithmetic(name):
    values = CASES[name]
    total, total_sq = es.exact_sums(values)
    want_total, want_sq = _exact(values)
    assert Fraction(total, 1 << es.SUM_SHIFT) == want_total
    assert Fraction(total_sq, 1 << es.SQUARE_SHIFT) == want_sq


def _partitioned(values: np.ndarray, rng: random.Random) -> Moments:
    order = list(range(values.size))
    rng.shuffle(order)
    shuffled = values[order]
    cuts = sorted(rng.sample(range(1, values.size), min(25, values.size - 1)))
    parts = [Moments.of(p) for p in np.split(shuffled, cuts)]
    rng.shuffle(parts)
    merged = Moments()
    for p in parts:
        merged = merged.merge(p)
    return merged


@pytest.mark.parametrize("name", sorted(CASES))
def test_any_partition_and_order_gives_the_same_correctly_rounded_moments(name):
    values = CASES[name]
    whole = Moments.of(values)
    rng = random.Random(name)
    for _ in range(4):
        assert _partitioned(values, rng) == whole
    total, total_sq = _exact(values)
    n = values.size
    assert whole.mean == float(total / n)
    spread = (n * total_sq - total * total) / (n * n)
    try:
        want_variance = float(spread)
    except OverflowError:
        want_variance = float("inf")
    assert whole.variance == want_variance
    assert (whole.minimum, whole.maximum) == (values.min(), values.max())


def test_the_partitions_that_used_to_differ_in_the_last_bit():
    values = np.random.default_rng(0).normal(37.3, 11.1, 10000).round(2)
    merged = []
    for sizes in ([10000], [1000] * 10, [137] * 72 + [136]):
        m = Moments()
        for chunk in np.split(values, np.cumsum(sizes)[:-1]):
            m = m.merge(Moments.of(chunk))
        merged.append((m.mean.hex(), m.variance.hex()))
    assert len(set(merged)) == 1
    total, total_sq = _exact(values)
    assert merged[0][0] == float(total / 10000).hex()


def _csv(tmp_path) -> str:
    rng = np.random.default_rng(11)
    lines = ["price,ratio,count"]
    for _ in range(5000):
        lines.append(f"{rng.normal(37.3, 11.1):.2f},{rng.lognormal(0, 3):.17g},"
                     f"{int(rng.integers(0, 50))}")
    path = tmp_path / "data.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


@pytest.mark.slow  # three analyze runs, ~90 s on the shared machine
def test_manifest_is_byte_identical_for_any_input_split_bytes(tmp_path):
    from beam_prep.pipelines import analyze

    spec = tmp_path / "spec.yaml"
    spec.write_text("features:\n  - {name: price, kind: numeric}\n"
                    "  - {name: ratio, kind: numeric}\n  - {name: count, kind: numeric}\n",
                    encoding="utf-8")
    data = _csv(tmp_path)
    manifests = []
    for split_bytes in (0, 1024, 65536):
        out = tmp_path / f"out-{split_bytes}"
        assert analyze.main(["--spec", str(spec), "--input", data, "--output", str(out),
                             "--input_split_bytes", str(split_bytes), "--quiet",
                             "--no_report"]) == 0
        manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
        manifests.append(manifest)
    splits = [m["input"].pop("splits") for m in manifests]
    assert splits[0] == 1 and splits[1] > splits[2] > 1  # the runs really split differently
    for m in manifests:
        m.pop("fingerprint")
    dumped = {json.dumps(m, sort_keys=True) for m in manifests}
    assert len(dumped) == 1
    price = manifests[0]["features"]["price"]["stats"]
    values = np.loadtxt(data, delimiter=",", skiprows=1, usecols=0)
    total, _ = _exact(values)
    assert price["mean"] == float(total / values.size)
