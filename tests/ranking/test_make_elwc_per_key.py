"""``make-elwc --artifacts`` over artifacts with a ``per_key`` feature.

The per-key layer needs the key column too, which the per-feature encoder does not pass: the
job failed with a KeyError traceback inside Beam. A per-key feature is now not covered
(written unchanged, like a derived feature); the other features are still encoded.
Oracle: the raw input values.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("tensorflow")

from beam_prep.pipelines import analyze, make_elwc  # noqa: E402

from beam_prep.ranking.feature_spec import ElwcFeatureSpec  # noqa: E402
from beam_prep.ranking.train.reader import make_dataset  # noqa: E402


def test_per_key_feature_is_written_raw_and_the_others_encoded(tmp_path):
    rows = [{"qid": f"q{i // 5}", "label": i % 3, "price": float(i), "store": "ab"[i % 2],
             "city": "xyz"[i % 3]} for i in range(40)]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "s.yaml").write_text("features:\n  - {name: price, kind: numeric, "
                                     "per_key: store}\n  - {name: city, kind: string}\n")
    art = str(tmp_path / "art")
    analyze.run(["--spec", str(tmp_path / "s.yaml"), "--input", str(tmp_path / "d.jsonl"),
                 "--output", art, "--quiet"])
    out = tmp_path / "enc"
    make_elwc.main(["--input", str(tmp_path / "d.jsonl"), "--input_format", "jsonl",
                    "--output", str(out), "--label_dtype", "int64", "--splits", "train:1",
                    "--quiet", "--artifacts", art])
    spec = ElwcFeatureSpec.load(str(out / "feature_spec.json"))
    assert spec.encoded.names == {"city"}
    feats, _ = next(iter(make_dataset(str(out / "train-*.tfrecord"), list_size=5,
                                      batch_size=100)))
    got = sorted(float(v) for v in feats["price"].numpy().ravel() if v != 0)
    assert got == sorted(r["price"] for r in rows if r["price"] != 0)
