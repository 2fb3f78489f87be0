"""Drift flags of `beam-prep diff` for a per-key feature's std, range (min/max) and bucket
boundaries.

Artifact pairs are made by the real analyzer from constructed rows; every measure and flag
expected is computed here from the raw rows (numpy per-key std, min, max and exact
quantiles, the documented formulas and the default thresholds), never from the diff.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest

from beam_prep import cli
from beam_prep.diff.compare import diff_artifacts
from beam_prep.diff.per_key import compare_per_key
from beam_prep.diff.per_key_buckets import compare_buckets
from beam_prep.diff.per_key_drift import KeyDriftTally
from beam_prep.diff.render import render_table, to_dict
from beam_prep.diff.thresholds import DiffThresholds
from tests.diff.test_drift_flags_keys_target import _analyze
from tests.per_key.test_per_key_buckets import oracle as bucket_oracle

T = DiffThresholds()
SPEC = "features:\n  - {name: price, kind: numeric, per_key: store, num_buckets: 4}\n"


def _rows(seed: int, *, std: dict | None = None, shift: dict | None = None) -> list[dict]:
    """k0..k3: 200 values around 3 * i (std 1); s0: 20 values (too few to compare)."""
    rng = np.random.default_rng(seed)
    rows = []
    for key, n in {"k0": 200, "k1": 200, "k2": 200, "k3": 200, "s0": 20}.items():
        center = 3.0 * int(key[1:])
        for z in rng.normal(0.0, 1.0, n):
            v = center + (shift or {}).get(key, 0.0) + z * (std or {}).get(key, 1.0)
            rows.append({"store": key, "price": round(float(v), 6)})
    return rows


def _oracle(old: list[dict], new: list[dict]) -> dict:
    def groups(rows):
        out = collections.defaultdict(list)
        for r in rows:
            out[r["store"]].append(r["price"])
        return {k: np.array(v) for k, v in out.items()}

    a, b = groups(old), groups(new)
    compared = [k for k in a if k in b and min(a[k].size, b[k].size) >= T.min_shift_rows]
    weight = sum(a[k].size for k in compared)

    def share(shift, limit):
        return sum(a[k].size for k in compared if shift(k) > limit) / weight

    ob = bucket_oracle([r["store"] for r in old], [r["price"] for r in old], 4)
    nb = bucket_oracle([r["store"] for r in new], [r["price"] for r in new], 4)
    m = {
        "key_std_shifted_share": share(
            lambda k: abs(b[k].std() - a[k].std()) / a[k].std(), T.max_std_shift),
        "key_range_shifted_share": share(
            lambda k: max(abs(b[k].min() - a[k].min()), abs(b[k].max() - a[k].max()))
            / (a[k].max() - a[k].min()), T.max_boundary_shift),
        "key_boundary_shifted_share": share(
            lambda k: max(abs(y - x) for x, y in zip(ob[k], nb[k])) / (ob[k][-1] - ob[k][0]),
            T.max_boundary_shift),
    }
    return {"measures": m, "compared": len(compared),
            "flags": {k for k, v in m.items() if v > T.max_shifted_share}}


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("spread")
    old = _rows(1)
    # k0: std 1 -> 0.05 (its z-scores 20x larger), mean kept; k1: every value + 1 (its
    # quartile boundaries move 1 / 1.35 = 74% of their range; the mean moves 0.3 global std)
    new = _rows(1, std={"k0": 0.05, "s0": 3.0}, shift={"k1": 1.0, "s0": 5.0})
    calm = _rows(2)
    return (old, new, calm, _analyze(tmp, "old", SPEC, old), _analyze(tmp, "new", SPEC, new),
            _analyze(tmp, "calm", SPEC, calm))


def _measures(f) -> dict:
    return {"key_std_shifted_share": f.per_key.drift.std_shifted_share,
            "key_range_shifted_share": f.per_key.drift.range_shifted_share,
            "key_boundary_shifted_share": f.per_key_buckets.shifted_share}


def test_std_range_and_boundary_flags_match_the_oracle(pair):
    old, new, _, a, b, _ = pair
    want = _oracle(old, new)
    assert {"key_std_shifted_share", "key_boundary_shifted_share"} <= want["flags"]
    (f,) = diff_artifacts(a, b).features
    assert _measures(f) == pytest.approx(want["measures"], rel=1e-9)
    assert f.per_key_buckets.compared_keys == want["compared"] == 4
    got = {x.metric for x in f.flags}
    assert {m for m in got if m in want["measures"]} == want["flags"]
    assert "key_mean_shifted_share" not in got  # k1's mean moved less than 0.5 global std
    assert f.per_key.drift.most_std_shifted[0] == "k0"
    assert f.per_key.drift.most_std_shifted[1] == pytest.approx(
        1 - np.std([r["price"] for r in new if r["store"] == "k0"])
        / np.std([r["price"] for r in old if r["store"] == "k0"]), rel=1e-9)
    assert f.per_key_buckets.most_shifted[0] == "k1"


def test_calm_pair_raises_no_spread_flag(pair):
    old, _, calm, a, _, c = pair
    want = _oracle(old, calm)
    assert want["flags"] == set()
    report = diff_artifacts(a, c)
    assert _measures(report.features[0]) == pytest.approx(want["measures"], rel=1e-9)
    assert report.flags == []


def test_fail_on_drift_exits_3_and_renders_the_flags(pair, capsys):
    _, _, _, a, b, c = pair
    assert cli.main(["diff", a, b, "--fail_on_drift"]) == 3
    out = capsys.readouterr().out
    assert "price: share of frequent keys' OLD values whose std moved > 0.5" in out
    assert "bucket boundaries moved > 0.5 of the key's OLD boundary range" in out
    assert "No drift flag raised" not in out
    assert cli.main(["diff", a, c, "--fail_on_drift"]) == 0
    capsys.readouterr()
    loose = ["--max_shifted_share", "0.9"]
    assert cli.main(["diff", a, b, "--fail_on_drift", *loose]) == 0
    capsys.readouterr()
    body = to_dict(diff_artifacts(a, b))["features"][0]
    assert body["per_key"]["drift"]["most_std_shifted"][0] == "k0"
    assert body["per_key_buckets"]["most_shifted"][0] == "k1"
    assert "std shifted" in render_table(diff_artifacts(a, b))


def test_one_key_std_falling_20x_alone_is_flagged():
    """The reported case: a key's std falls from 1 to 0.05 with its count, mean, min and
    max unchanged; the other key is unchanged."""
    old = [b'["a",500,0.0,1.0,-3.0,3.0]', b'["b",500,5.0,1.0,2.0,8.0]']
    new = [b'["a",500,0.0,0.0025,-3.0,3.0]', b'["b",500,5.0,1.0,2.0,8.0]']
    d = compare_per_key(iter(old), iter(new), tally=KeyDriftTally(2.0, 100, 0.5, 0.5, 0.5))
    assert d.drift.std_shifted_share == 0.5
    assert d.drift.most_std_shifted == ("a", pytest.approx(0.95))
    assert d.drift.range_shifted_share == 0.0 and d.drift.shifted_share == 0.0


def test_constant_key_that_spreads_counts_as_shifted_without_a_largest_shift():
    old = [b'["a",200,1.0,0.0,1.0,1.0]']
    new = [b'["a",200,1.0,0.25,0.0,2.0]']
    d = compare_per_key(iter(old), iter(new), tally=KeyDriftTally(1.0, 100))
    assert (d.drift.std_shifted_share, d.drift.range_shifted_share) == (1.0, 1.0)
    assert d.drift.most_std_shifted is None and d.drift.most_range_shifted is None
    same = compare_per_key(iter(old), iter(old), tally=KeyDriftTally(1.0, 100))
    assert (same.drift.std_shifted_share, same.drift.range_shifted_share) == (0.0, 0.0)
    null = compare_per_key(iter([b'["a",200,1.0,null,1.0,1.0]']), iter(new),
                           tally=KeyDriftTally(1.0, 100))
    assert null.drift.std_shifted_share is None  # a null variance is not compared


def test_bucket_share_leaves_out_rare_keys_and_other_bucket_counts():
    old = [b'["a",150,0,[0.0,1.0,2.0]]', b'["b",5,0,[0.0,1.0,2.0]]']
    new = [b'["a",150,0,[0.0,1.0,2.0]]', b'["b",5,0,[9.0,9.5,10.0]]']
    d = compare_buckets(iter(old), iter(new), 4, 4, min_rows=100, limit=0.5)
    assert (d.compared_keys, d.shifted_share, d.changed) == (1, 0.0, 1)
    d = compare_buckets(iter(old), iter(new), 4, 4, min_rows=5, limit=0.5)
    assert (d.compared_keys, d.shifted_share, d.most_shifted) == (2, 5 / 155, ("b", 4.5))
    flat = compare_buckets(iter([b'["a",150,0,[1.0,1.0,1.0]]']),
                           iter([b'["a",150,0,[1.0,1.0,1.5]]']), 4, 4)
    assert (flat.shifted_share, flat.most_shifted) == (1.0, None)
