"""Per-key drift flags for one key's extreme change, whatever its share of the values:
``key_std_ratio_exceeded`` (std changed by a factor >= 4) and ``key_boundary_moved``
(bucket boundaries moved >= max(0.5, 4*sqrt(1/n_old + 1/n_new)) of the key's boundary range).

Artifact pairs come from the real analyzer on seeded numpy rows; the expected keys are
computed here from the raw rows (numpy std, exact per-key boundaries, the documented rules).
"""

from __future__ import annotations

import collections
import json
import math

import numpy as np
import pytest

from beam_prep import cli
from beam_prep.diff.compare import diff_artifacts
from beam_prep.diff.per_key import compare_per_key
from beam_prep.diff.per_key_buckets import compare_buckets
from beam_prep.diff.per_key_drift import KeyDriftTally
from beam_prep.diff.thresholds import DiffThresholds
from beam_prep.errors import SpecError
from tests.diff.test_drift_flags_keys_target import _analyze
from tests.per_key.test_per_key_buckets import oracle as bucket_oracle

SPEC = "features:\n  - {name: price, kind: numeric, per_key: store, num_buckets: 4}\n"
NEW_FLAGS = {"key_std_ratio_exceeded", "key_boundary_moved"}


def _rows(seed: int, sizes: dict, *, std: dict | None = None,
          shift: dict | None = None) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for i, (key, n) in enumerate(sizes.items()):
        z = rng.normal(0.0, 1.0, n)
        for v in 3.0 * i + (shift or {}).get(key, 0.0) + z * (std or {}).get(key, 1.0):
            rows.append({"store": key, "price": round(float(v), 6)})
    return rows


T = DiffThresholds()


def _oracle(old: list[dict], new: list[dict], t: DiffThresholds = T) -> dict:
    """Keys each new rule flags, from the raw rows: {rule: {key: value}}."""
    def groups(rows):
        out = collections.defaultdict(list)
        for r in rows:
            out[r["store"]].append(r["price"])
        return {k: np.array(v) for k, v in out.items()}

    a, b = groups(old), groups(new)
    ob = bucket_oracle([r["store"] for r in old], [r["price"] for r in old], 4)
    nb = bucket_oracle([r["store"] for r in new], [r["price"] for r in new], 4)
    std, moved = {}, {}
    for k in a.keys() & b.keys():
        n0, n1 = a[k].size, b[k].size
        if min(n0, n1) < t.min_key_rows:
            continue
        s0, s1 = a[k].std(), b[k].std()
        ratio = max(s0, s1) / min(s0, s1)
        if ratio >= t.max_key_std_ratio:
            std[k] = ratio
        span = max(ob[k][-1] - ob[k][0], nb[k][-1] - nb[k][0])
        shift = max(abs(y - x) for x, y in zip(ob[k], nb[k])) / span
        if shift >= max(t.max_key_boundary_shift, 4 * math.sqrt(1 / n0 + 1 / n1)):
            moved[k] = shift
    return {"key_std_ratio_exceeded": std, "key_boundary_moved": moved}


@pytest.fixture(scope="module")
def reproducer(tmp_path_factory):
    """30 keys: k00 has 50 values and its std falls from 1 to 0.05 (z-scores 20x larger);
    k01 (120 values, 1 of 29 frequent keys) moves by 1 std, 74% of its quartile range."""
    tmp = tmp_path_factory.mktemp("extreme")
    sizes = {"k00": 50} | {f"k{i:02d}": 120 for i in range(1, 30)}
    old = _rows(1, sizes)
    new = _rows(1, sizes, std={"k00": 0.05}, shift={"k01": 1.0})
    return old, new, _analyze(tmp, "old", SPEC, old), _analyze(tmp, "new", SPEC, new)


@pytest.fixture(scope="module")
def calm(tmp_path_factory):
    """200 keys of 10-50 values each, the same distribution drawn with two seeds."""
    tmp = tmp_path_factory.mktemp("extreme_calm")
    sizes = {f"c{i:03d}": int(n) for i, n in
             enumerate(np.random.default_rng(7).integers(10, 51, 200))}
    old, new = _rows(11, sizes), _rows(12, sizes)
    return old, new, _analyze(tmp, "old", SPEC, old), _analyze(tmp, "new", SPEC, new)


def test_one_small_key_whose_std_falls_20x_and_one_moved_key_are_flagged(reproducer):
    old, new, a, b = reproducer
    want = _oracle(old, new)
    assert set(want["key_std_ratio_exceeded"]) == {"k00"}
    assert set(want["key_boundary_moved"]) == {"k01"}
    (f,) = diff_artifacts(a, b).features
    flags = {x.metric: x for x in f.flags}
    assert NEW_FLAGS <= set(flags)
    # the share-based flags stay silent: k00 is rare, k01 holds 1/29 of the frequent values
    assert not {"key_std_shifted_share", "key_boundary_shifted_share"} & set(flags)
    k = f.per_key.drift
    assert k.extreme_std_keys == 1
    assert k.worst_std_ratio[0] == "k00"
    assert k.worst_std_ratio[1] == pytest.approx(want["key_std_ratio_exceeded"]["k00"],
                                                 rel=1e-9)
    assert flags["key_std_ratio_exceeded"].value == pytest.approx(k.worst_std_ratio[1])
    d = f.per_key_buckets
    assert (d.moved_keys, d.most_moved[0]) == (1, "k01")
    assert d.most_moved[1] == pytest.approx(want["key_boundary_moved"]["k01"], rel=1e-9)
    assert "worst: 'k00', std " in flags["key_std_ratio_exceeded"].message
    shift = want["key_boundary_moved"]["k01"]
    assert f"worst: 'k01' by {shift:.4g})" in flags["key_boundary_moved"].message


def test_fail_on_drift_exits_3_and_json_carries_the_new_flags(reproducer, capsys):
    _, _, a, b = reproducer
    assert cli.main(["diff", a, b, "--fail_on_drift"]) == 3
    out = capsys.readouterr().out
    assert "1 key with >= 10 values on both sides whose std changed by a factor >= 4" in out
    assert "whose bucket boundaries moved >= max(0.5, 4*sqrt(1/n_old + 1/n_new))" in out
    assert cli.main(["diff", a, b, "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert NEW_FLAGS <= {x["metric"] for x in body["flags"]}
    feature = body["features"][0]
    assert feature["per_key"]["drift"]["worst_std_ratio"][0] == "k00"
    assert feature["per_key_buckets"]["most_moved"][0] == "k01"
    # looser limits silence them (the share flags stay silent too)
    loose = ["--max_key_std_ratio", "30", "--max_key_boundary_shift", "0.9"]
    assert cli.main(["diff", a, b, "--fail_on_drift", *loose]) == 0
    capsys.readouterr()


def test_calm_pair_of_200_small_keys_raises_no_new_flag(calm):
    old, new, a, b = calm
    assert _oracle(old, new) == {"key_std_ratio_exceeded": {}, "key_boundary_moved": {}}
    (f,) = diff_artifacts(a, b).features
    assert not NEW_FLAGS & {x.metric for x in f.flags}
    assert (f.per_key.drift.extreme_std_keys, f.per_key_buckets.moved_keys) == (0, 0)


def test_zero_std_on_one_side_counts_and_the_row_minimum_applies():
    old = [b'["a",10,1.0,0.0,1.0,1.0]', b'["b",10,0.0,1.0,-2.0,2.0]',
           b'["c",9,0.0,1.0,-2.0,2.0]', b'["d",10,0.0,null,0.0,0.0]']
    new = [b'["a",10,1.0,0.25,0.0,2.0]', b'["b",10,0.0,0.0,0.0,0.0]',
           b'["c",9,0.0,100.0,-20.0,20.0]', b'["d",10,0.0,1.0,-1.0,1.0]']
    d = compare_per_key(iter(old), iter(new), tally=KeyDriftTally(1.0)).drift
    assert (d.extreme_std_keys, d.worst_std_ratio) == (2, ("a", None, 0.0, 0.5))
    same = compare_per_key(iter(old), iter(old), tally=KeyDriftTally(1.0)).drift
    assert (same.extreme_std_keys, same.worst_std_ratio) == (0, None)
    loose = compare_per_key(iter(old), iter(new), tally=KeyDriftTally(1.0, min_key_rows=9))
    assert loose.drift.extreme_std_keys == 3  # c (std 1 -> 10) now checked too


def test_boundary_move_scale_is_the_larger_range_and_widens_for_small_keys():
    # OLD range 0, NEW range 2: moved by 2 / 2 = 1 (not an unscaled infinite move)
    d = compare_buckets(iter([b'["a",400,0,[1.0,1.0,1.0]]']),
                        iter([b'["a",400,0,[1.0,2.0,3.0]]']), 4, 4)
    assert (d.moved_keys, d.most_moved) == (1, ("a", 1.0))
    # a constant key that moved: infinite, shown as None
    d = compare_buckets(iter([b'["a",400,0,[1.0,1.0,1.0]]']),
                        iter([b'["a",400,0,[2.0,2.0,2.0]]']), 4, 4)
    assert (d.moved_keys, d.most_moved) == (1, ("a", None))
    # 0.7 of the range: moved with 400 values (limit 0.5), not with 50 (limit 0.8)
    many = compare_buckets(iter([b'["a",400,0,[0.0,1.0]]']), iter([b'["a",400,0,[0.7,1.7]]']),
                           3, 3)
    few = compare_buckets(iter([b'["a",50,0,[0.0,1.0]]']), iter([b'["a",50,0,[0.7,1.7]]']),
                          3, 3)
    assert (many.moved_keys, few.moved_keys) == (1, 0)


def test_std_ratio_limit_must_be_a_factor():
    with pytest.raises(SpecError, match="max_key_std_ratio"):
        DiffThresholds(max_key_std_ratio=0.5)
    with pytest.raises(SpecError, match="min_key_rows"):
        DiffThresholds(min_key_rows=0)
