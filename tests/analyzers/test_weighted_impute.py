"""``impute: most_frequent`` with ``weights``: the top of the *weighted* vocabulary.

The weighted vocabulary writer did not report its first token, so ``imputed_value`` was
null and missing values were left missing (OOV) although the data had values. Oracle:
the weighted counts summed here (ties: token bytes descending, the vocabulary's order).
"""

from __future__ import annotations

import collections
import json

import pyarrow as pa
import pytest
from beam_prep.pipelines import analyze

from beam_prep import Artifacts
from beam_prep.transform.layers import BatchEncoder

ROWS = [("a", 10.0, 1), ("a", 10.0, 1), ("b", 10.0, 2), ("b", 0.5, 2), ("c", 0.25, 3),
        ("c", 0.25, 3), ("c", 0.25, 3), ("c", 0.25, 3), (None, 1.0, None)]


def _oracle(values, weights) -> str:
    total: collections.Counter = collections.Counter()
    for v, w in zip(values, weights):
        if v is not None:
            total[str(v)] += w
    return sorted(total, key=lambda t: (-total[t], [-b for b in t.encode()] + [1]))[0]


@pytest.mark.parametrize("kind", ["string", "integer"])
def test_weighted_most_frequent_is_imputed(tmp_path, kind):
    col = 0 if kind == "string" else 2
    rows = [{"v": r[col], "w": r[1]} for r in ROWS]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "s.yaml").write_text(f"features:\n  - {{name: v, kind: {kind}, "
                                     "impute: most_frequent, weights: w}\n")
    art = str(tmp_path / "art")
    analyze.run(["--spec", str(tmp_path / "s.yaml"), "--input", str(tmp_path / "d.jsonl"),
                 "--output", art, "--quiet"])
    want = _oracle([r["v"] for r in rows], [r["w"] for r in rows])
    assert want == ("a" if kind == "string" else "1")  # unweighted it would be c / 3
    got = Artifacts(art).stats("v")["imputed_value"]
    assert got == (want if kind == "string" else int(want))
    enc = BatchEncoder(art)
    typ = pa.string() if kind == "string" else pa.int64()
    batch = pa.RecordBatch.from_arrays([pa.array([None, got], typ)], names=["v"])
    ids = enc.encode(batch)["v"].values.ravel()
    assert ids[0] == ids[1]  # the missing value encodes as the imputed one
