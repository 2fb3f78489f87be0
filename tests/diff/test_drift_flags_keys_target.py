"""Drift flags of `beam-prep diff` for per-key statistics and target encodings.

Artifact pairs are made by the real analyzer from constructed rows; every expected measure
and flag is computed here from the raw rows (numpy group-bys, the documented formulas and
the default thresholds), never from the diff's output.
"""

from __future__ import annotations

import collections
import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from beam_prep.pipelines import analyze

from beam_prep import cli
from beam_prep.analyzers.target.stats import folds_of
from beam_prep.diff.compare import diff_artifacts
from beam_prep.diff.render import render_table, to_dict
from beam_prep.diff.thresholds import DiffThresholds

T = DiffThresholds()
KEY_SPEC = "features:\n  - {name: price, kind: numeric, per_key: store}\n"
TE_SPEC = ("features:\n  - {name: c, kind: string, target_encoding: {labels: y, "
           "fold_column: u, folds: 3, smoothing: 5}}\n")


def _analyze(tmp: Path, name: str, spec: str, rows: list[dict]) -> str:
    (tmp / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp / f"{name}.yaml").write_text(spec)
    analyze.run(["--spec", str(tmp / f"{name}.yaml"), "--input", str(tmp / f"{name}.jsonl"),
                 "--output", str(tmp / name), "--quiet", "--no_report"])
    return str(tmp / name)


# ---- per-key ------------------------------------------------------------------------------

def _key_rows(seed: int, *, shift: dict | None = None, drop: tuple = (),
              extra: dict | None = None) -> list[dict]:
    """k0..k9: 150 values each around k; s0..s4: 20 values each (too few to compare)."""
    rng = np.random.default_rng(seed)
    sizes = {f"k{i}": 150 for i in range(10)} | {f"s{i}": 20 for i in range(5)}
    sizes = {k: n for k, n in sizes.items() if k not in drop} | (extra or {})
    rows = []
    for key, n in sizes.items():
        center = float(key[1:]) if key.startswith("k") and key[1:].isdigit() else 0.0
        for v in rng.normal(center + (shift or {}).get(key, 0.0), 1.0, n):
            rows.append({"store": key, "price": round(float(v), 6)})
    rows.append({"store": None, "price": 3.0})  # a value without a key
    return rows


def _key_oracle(old: list[dict], new: list[dict]) -> dict:
    def groups(rows):
        out = collections.defaultdict(list)
        for r in rows:
            if r["store"] is not None:
                out[r["store"]].append(r["price"])
        return {k: (len(v), float(np.mean(v))) for k, v in out.items()}

    a, b = groups(old), groups(new)
    std = float(np.std([r["price"] for r in old]))
    old_n, new_n = sum(n for n, _ in a.values()), sum(n for n, _ in b.values())
    compared = [k for k in a if k in b and min(a[k][0], b[k][0]) >= T.min_shift_rows]
    weight = sum(a[k][0] for k in compared)
    shifted = sum(a[k][0] for k in compared if abs(b[k][1] - a[k][1]) / std > T.max_mean_shift)
    m = {"key_added_share": sum(n for k, (n, _) in b.items() if k not in a) / new_n,
         "key_removed_share": sum(n for k, (n, _) in a.items() if k not in b) / old_n,
         "key_count_change": (len(b) - len(a)) / len(a),
         "key_mean_shifted_share": shifted / weight}
    limits = {"key_added_share": T.max_oov_share, "key_removed_share": T.max_oov_share,
              "key_count_change": T.max_size_change,
              "key_mean_shifted_share": T.max_shifted_share}
    return {"measures": m, "compared": len(compared),
            "flags": {k for k, v in m.items() if abs(v) > limits[k]}}


@pytest.fixture(scope="module")
def key_pair(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("keys")
    old = _key_rows(1)
    new = _key_rows(1, shift={"k0": 3.0, "k2": -3.0, "s0": 6.0}, drop=("k1",),
                    extra={"kx": 200, "k3": 400} | {f"n{i}": 5 for i in range(10)})
    calm = _key_rows(2)  # the same distributions, other draws
    return (old, new, calm, _analyze(tmp, "old", KEY_SPEC, old),
            _analyze(tmp, "new", KEY_SPEC, new), _analyze(tmp, "calm", KEY_SPEC, calm))


def _measures(d) -> dict:
    k = d.drift
    return {"key_added_share": k.added_share, "key_removed_share": k.removed_share,
            "key_count_change": k.key_count_change, "key_mean_shifted_share": k.shifted_share}


def test_per_key_flags_match_the_oracle(key_pair):
    old, new, _, a, b, _ = key_pair
    want = _key_oracle(old, new)
    assert want["flags"] == {"key_added_share", "key_removed_share", "key_count_change",
                             "key_mean_shifted_share"}  # the pair is built to drift
    (f,) = diff_artifacts(a, b).features
    assert _measures(f.per_key) == pytest.approx(want["measures"], rel=1e-9)
    assert f.per_key.drift.compared_keys == want["compared"] == 9
    # the std / range shares have their own oracle (test_per_key_spread_flags.py)
    assert {x.metric for x in f.flags if x.metric in want["measures"]} == want["flags"]
    assert f.per_key.drift.most_shifted[0] in ("k0", "k2")


def test_calm_per_key_pair_raises_no_flag(key_pair):
    old, _, calm, a, _, c = key_pair
    want = _key_oracle(old, calm)
    assert want["flags"] == set()
    report = diff_artifacts(a, c)
    assert _measures(report.features[0].per_key) == pytest.approx(want["measures"], rel=1e-9)
    assert report.flags == []
    assert cli.main(["diff", a, c, "--fail_on_drift"]) == 0


def test_per_key_thresholds_are_configurable_and_rendered(key_pair, capsys):
    old, new, _, a, b, _ = key_pair
    assert cli.main(["diff", a, b, "--fail_on_drift"]) == 3
    out = capsys.readouterr().out
    assert "key_mean_shifted_share" in out and "price: share of OLD values whose per_key" in out
    loose = ["--max_oov_share", "0.5", "--max_size_change", "1", "--max_shifted_share", "0.5",
             "--max_std_shift", "9", "--max_mean_shift", "9"]
    assert cli.main(["diff", a, b, "--fail_on_drift", *loose]) == 0
    capsys.readouterr()
    # with min_shift_rows above every key's count, no key is compared: no shifted share
    report = diff_artifacts(a, b, thresholds=DiffThresholds(min_shift_rows=1000))
    assert report.features[0].per_key.drift.shifted_share is None
    assert "key_mean_shifted_share" not in {x.metric for x in report.flags}
    body = to_dict(report)["features"][0]["per_key"]["drift"]
    assert body["compared_keys"] == 0
    assert body["key_count_change"] == _key_oracle(old, new)["measures"]["key_count_change"]


# ---- target encoding ----------------------------------------------------------------------

P = [0.1 + 0.05 * i for i in range(10)]


def _te_rows(seed: int, *, p: dict | None = None, drop: tuple = (),
             extra: dict | None = None, n: int = 300) -> list[dict]:
    rng = np.random.default_rng(seed)
    probs = {f"t{i}": P[i] for i in range(10) if f"t{i}" not in drop} | (extra or {})
    probs |= p or {}
    rows = []
    for token, prob in probs.items():
        for y in rng.random(n) < prob:
            rows.append({"c": token, "u": len(rows), "y": float(y)})
    return rows


def _te_oracle(old: list[dict], new: list[dict], folds: int = 3, m: float = 5.0) -> dict:
    def stats(rows):
        k = folds_of(pa.array([r["u"] for r in rows]), folds).tolist()
        cells = collections.defaultdict(lambda: [0, 0.0])
        for r, fold in zip(rows, k):
            cells[(r["c"], fold)][0] += 1
            cells[(r["c"], fold)][1] += r["y"]
        g = sum(r["y"] for r in rows) / len(rows)
        per = collections.defaultdict(lambda: [0, 0.0])
        for (t, _), (c, s) in cells.items():
            per[t][0] += c
            per[t][1] += s
        enc = {t: (s + m * g) / (c + m) for t, (c, s) in per.items()}
        return cells, per, g, enc

    cells, per, g, enc = stats(old)
    _, new_per, new_g, new_enc = stats(new)
    between = sum(c * (s / c - g) ** 2 for c, s in per.values()) / sum(
        c for c, _ in per.values())
    within_ss = sum(c * (s / c - per[t][1] / per[t][0]) ** 2 for (t, _), (c, s) in cells.items())
    df = sum(len({k for (tt, k) in cells if tt == t}) - 1 for t in per)
    std = math.sqrt(between + within_ss / df)
    compared = [t for t in per if t in new_per and min(per[t][0], new_per[t][0])
                >= T.min_shift_rows]
    weight = sum(per[t][0] for t in compared)
    shifted = sum(per[t][0] for t in compared
                  if abs(new_enc[t] - enc[t]) / std > T.max_token_shift)
    new_rows, old_rows = sum(c for c, _ in new_per.values()), sum(c for c, _ in per.values())
    m_ = {"target_global_mean_shift": (new_g - g) / std,
          "target_token_added_share": sum(c for t, (c, _) in new_per.items() if t not in per)
          / new_rows,
          "target_token_removed_share": sum(c for t, (c, _) in per.items() if t not in new_per)
          / old_rows,
          "target_encoding_shifted_share": shifted / weight}
    limits = {"target_global_mean_shift": T.max_target_shift,
              "target_token_added_share": T.max_oov_share,
              "target_token_removed_share": T.max_oov_share,
              "target_encoding_shifted_share": T.max_shifted_share}
    return {"measures": m_, "std": std, "compared": len(compared),
            "flags": {k for k, v in m_.items() if abs(v) > limits[k]}}


def _te_measures(t) -> dict:
    return {"target_global_mean_shift": t.global_mean_shift,
            "target_token_added_share": t.added_share,
            "target_token_removed_share": t.removed_share,
            "target_encoding_shifted_share": t.shifted_share}


@pytest.fixture(scope="module")
def te_pair(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("te")
    old = _te_rows(1)
    new = _te_rows(1, p={"t0": 0.9, "t1": 0.9}, drop=("t9",), extra={"fresh": 0.5})
    new += [{"c": "t5", "u": 10_000 + i, "y": float(i % 4 == 0)} for i in range(200)]
    calm = _te_rows(2)
    return (old, new, calm, _analyze(tmp, "old", TE_SPEC, old),
            _analyze(tmp, "new", TE_SPEC, new), _analyze(tmp, "calm", TE_SPEC, calm))


def test_target_encoding_flags_match_the_oracle(te_pair):
    old, new, _, a, b, _ = te_pair
    want = _te_oracle(old, new)
    assert want["flags"] == {"target_global_mean_shift", "target_token_added_share",
                             "target_token_removed_share", "target_encoding_shifted_share"}
    (f,) = diff_artifacts(a, b).features
    t = f.target_encoding
    assert t.label_std == pytest.approx(want["std"], rel=1e-9)
    assert _te_measures(t) == pytest.approx(want["measures"], rel=1e-9)
    assert t.compared_tokens == want["compared"] == 9
    assert {x.metric for x in f.flags if x.metric.startswith("target_")} == want["flags"]
    assert t.most_shifted[0] in ("t0", "t1")


def test_calm_target_encoding_pair_raises_no_flag(te_pair):
    old, _, calm, a, _, c = te_pair
    want = _te_oracle(old, calm)
    assert want["flags"] == set()
    report = diff_artifacts(a, c)
    assert _te_measures(report.features[0].target_encoding) == pytest.approx(
        want["measures"], rel=1e-9)
    assert report.flags == []


def test_target_thresholds_are_configurable_and_rendered(te_pair, capsys):
    _, _, _, a, b, _ = te_pair
    assert cli.main(["diff", a, b, "--fail_on_drift"]) == 3
    out = capsys.readouterr().out
    assert "c target drift: global mean shift" in out
    assert "target_encoding_shifted_share" in out
    loose = ["--max_oov_share", "0.5", "--max_target_shift", "5", "--max_token_shift", "10",
             "--max_jsd", "1", "--max_size_change", "1", "--max_top_k_index_changed", "1"]
    assert cli.main(["diff", a, b, "--fail_on_drift", *loose]) == 0
    capsys.readouterr()
    body = to_dict(diff_artifacts(a, b))["features"][0]["target_encoding"]
    assert body["compared_tokens"] == 9 and body["most_shifted"][0] in ("t0", "t1")
    assert "target encoding global mean shift" in render_table(diff_artifacts(a, b))


def test_a_constant_old_label_flags_any_global_mean_change(tmp_path):
    old = [{"c": f"t{i % 3}", "u": i, "y": 0.0} for i in range(60)]
    new = [dict(r, y=1.0) if r["u"] == 0 else r for r in old]
    a, b = _analyze(tmp_path, "old", TE_SPEC, old), _analyze(tmp_path, "new", TE_SPEC, new)
    (f,) = diff_artifacts(a, b).features
    assert f.target_encoding.label_std is None
    assert [x.metric for x in f.flags if x.metric.startswith("target_")] == [
        "target_unscaled_change"]
    assert diff_artifacts(a, a).flags == []


@pytest.mark.parametrize("line", [b'["t0",0.5,["x"],[1.0],[0.5]]', b'{"t0": 1}', b'["t0"'])
def test_an_edited_target_file_is_a_clear_error(te_pair, tmp_path, line):
    import shutil

    from beam_prep.errors import ArtifactError

    _, _, _, a, b, _ = te_pair
    edited = tmp_path / "edited"
    shutil.copytree(b, edited)
    target = edited / "vocab" / "c.target.jsonl"
    body = target.read_bytes().split(b"\n")
    assert len(line) <= len(body[0])  # same size: the size check of the reader passes
    target.write_bytes(b"\n".join([line.ljust(len(body[0])), *body[1:]]))
    with pytest.raises(ArtifactError,
                       match=r"c\.target\.jsonl line 1: .*Fix: re-run `beam-prep analyze`"):
        diff_artifacts(a, str(edited))
