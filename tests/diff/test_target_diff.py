"""Target-encoding drift in `beam-prep diff` (oracle: per-token means from the raw rows)."""

from __future__ import annotations

import json

from beam_prep.pipelines import analyze

from beam_prep.diff.compare import diff_artifacts
from beam_prep.diff.render import render_table, to_dict

SPEC = ("features:\n  - {name: c, kind: string, target_encoding: {labels: y, fold_column: u, "
        "folds: 2, smoothing: 0}}\n")


def _run(tmp, name, rows):
    (tmp / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp / "s.yaml").write_text(SPEC)
    analyze.run(["--spec", str(tmp / "s.yaml"), "--input", str(tmp / f"{name}.jsonl"),
                 "--output", str(tmp / name), "--quiet"])
    return str(tmp / name)


def _means(rows):
    sums, counts = {}, {}
    for r in rows:
        sums[r["c"]] = sums.get(r["c"], 0.0) + r["y"]
        counts[r["c"]] = counts.get(r["c"], 0) + 1
    return {k: sums[k] / counts[k] for k in sums}


def test_diff_reports_global_mean_and_the_largest_encoding_change(tmp_path):
    old = [{"c": f"k{i % 5}", "u": i, "y": float(i % 4 == 0)} for i in range(200)]
    new = [dict(r, y=1.0) if r["c"] == "k3" else dict(r) for r in old]
    new += [{"c": "fresh", "u": 999, "y": 0.0}]
    a, b = _run(tmp_path, "old", old), _run(tmp_path, "new", new)
    (f,) = diff_artifacts(a, b).features
    t = f.target_encoding
    before, after = _means(old), _means(new)
    want_token = max(before, key=lambda k: abs(after[k] - before[k]))
    assert t.most_changed_token == want_token == "k3"
    assert t.max_encoding_change == abs(after["k3"] - before["k3"])
    assert t.old_global_mean == sum(r["y"] for r in old) / len(old)
    assert t.new_global_mean == sum(r["y"] for r in new) / len(new)
    assert (t.old_tokens, t.new_tokens, t.shared) == (5, 6, 5)
    report = diff_artifacts(a, b)
    assert "target encoding: global mean" in render_table(report)
    assert to_dict(report)["features"][0]["target_encoding"]["most_changed_token"] == "k3"


def test_features_without_target_encoding_keep_their_json(tmp_path):
    rows = [{"c": "a", "u": 1, "y": 1.0}]
    (tmp_path / "d.jsonl").write_text(json.dumps(rows[0]) + "\n")
    (tmp_path / "p.yaml").write_text("features:\n  - {name: c, kind: string}\n")
    for name in ("x", "z"):
        analyze.run(["--spec", str(tmp_path / "p.yaml"), "--input", str(tmp_path / "d.jsonl"),
                     "--output", str(tmp_path / name), "--quiet"])
    body = to_dict(diff_artifacts(str(tmp_path / "x"), str(tmp_path / "z")))
    assert "target_encoding" not in body["features"][0]
