"""Weighted vocabularies and quantiles against TF Transform 1.21 (run in a subprocess).

``tft.vocabulary(x, weights=w)``: the files must be byte-identical (weights are multiples of
1/8, so TFT's float32 sums are exact and the order is fully decided). ``tft.quantiles(x,
weights=w)``: both boundary lists must sit within ``2 * epsilon`` of each other in weighted
rank.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from beam_prep.pipelines import analyze

from tests.parity import tft_store

N = 4000
SPEC = """
features:
  - {name: s_all, kind: string, column: s, weights: w, min_count: 0}
  - {name: s_cut, kind: string, column: s, weights: w, min_count: 3.5, top_k: 7}
  - {name: i_all, kind: integer, column: i, weights: w, min_count: 0}
  - {name: x, kind: numeric, weights: w, num_buckets: 5, epsilon: 0.01}
"""


@pytest.fixture(scope="module")
def both(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("tft_weighted")
    rng = np.random.default_rng(11)
    cols = {"s": [f"k{int(v) % 60}" for v in rng.zipf(1.4, N)],
            "i": [int(v) for v in rng.integers(0, 40, N)],
            "x": [float(np.float32(v)) for v in rng.normal(5, 3, N)],
            "w": [float(v) for v in rng.integers(0, 40, N) / 8.0]}
    (root / "rows.json").write_text(json.dumps(cols), encoding="utf-8")
    with open(root / "data.csv", "w", encoding="utf-8") as f:
        f.write("s,i,x,w\n")
        for row in zip(*cols.values()):
            f.write(",".join(repr(v) if isinstance(v, float) else str(v) for v in row) + "\n")
    (root / "spec.yaml").write_text(SPEC, encoding="utf-8")
    tft = tft_store.reference(
        "weighted", "tft_weighted_reference.py",
        ["--data", str(root / "rows.json"), "--output", "{out}"],
        inputs=[root / "rows.json"], root=root,
        assets=lambda live, _: live / "tft" / "transform_fn" / "assets")
    analyze.run(["--spec", str(root / "spec.yaml"), "--input", str(root / "data.csv"),
                 "--output", str(root / "ours"), "--quiet", "--no_report"])
    return {"cols": cols, "tft": json.loads((tft / "results.json").read_text()),
            "assets": tft / "assets",
            "ours": root / "ours"}


@pytest.mark.parametrize("name", ["s_all", "s_cut", "i_all"])
def test_weighted_vocabulary_is_byte_identical_to_tft(both, name) -> None:
    ours = (both["ours"] / "vocab" / f"{name}.txt").read_bytes()
    theirs = (both["assets"] / name).read_bytes()
    assert ours == theirs


def test_weighted_quantiles_agree_with_tft_within_epsilon(both) -> None:
    x, w = np.array(both["cols"]["x"]), np.array(both["cols"]["w"])
    stats = json.loads((both["ours"] / "manifest.json").read_text())["features"]["x"]["stats"]
    ours, theirs = stats["boundaries"], both["tft"]["boundaries"]
    assert len(ours) == 4 and len(theirs) >= 4
    theirs = theirs[-4:] if len(theirs) == 4 else theirs[1:-1]

    def rank(v: float) -> float:
        return float(w[x <= v].sum() / w.sum())

    for a, b in zip(ours, theirs):
        assert abs(rank(a) - rank(b)) <= 2 * 0.01 + 1e-9, (a, b)
