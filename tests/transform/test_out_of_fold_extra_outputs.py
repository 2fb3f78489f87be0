"""``--out_of_fold`` with a feature that has an output after its target encoding.

The out-of-fold table was attached to the feature's *last* output; with
``missing_indicator: true`` that is ``<name>_missing``, so the target encoding kept its
serving (leaky) value and the indicator was overwritten by encodings. Oracle: the analysis
file's out-of-fold column for each row's fold (``out_of_fold_means`` for a missing value)
and ``value is None`` for the indicator.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from beam_prep.pipelines import analyze, transform

from beam_prep.analyzers.target.stats import folds_of

SPEC = ("features:\n  - {name: t, kind: string, missing_indicator: true, target_encoding: "
        "{labels: y, fold_column: u, folds: 3, smoothing: 1}}\n")


def test_out_of_fold_applies_to_the_target_output_not_the_indicator(tmp_path):
    rng = np.random.default_rng(5)
    rows = [{"t": None if i % 7 == 0 else f"c{int(rng.integers(0, 20))}", "u": f"u{i}",
             "y": float(rng.random() < 0.5)} for i in range(300)]
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "s.yaml").write_text(SPEC)
    art = str(tmp_path / "art")
    analyze.run(["--spec", str(tmp_path / "s.yaml"), "--input", str(data), "--output", art,
                 "--quiet"])
    out = tmp_path / "oof"
    transform.run(["--artifacts", art, "--input", str(data), "--output", str(out),
                   "--output_format", "parquet", "--quiet", "--out_of_fold"])
    table = pq.read_table(out / "data" / "part-00000-of-00001.parquet")
    lines = {line[0]: line for line in map(json.loads, open(f"{art}/vocab/t.target.jsonl"))}
    means = json.loads(open(f"{art}/manifest.json").read())["features"]["t"]["stats"][
        "target_encoding"]["out_of_fold_means"]
    fold = folds_of(pa.array([r["u"] for r in rows]), 3)
    want = np.array([means[k] if r["t"] is None else lines[r["t"]][4][k]
                     for r, k in zip(rows, fold)], np.float32)
    got = np.asarray(table.column("t_target_encoding").to_numpy(), np.float32)
    np.testing.assert_array_equal(got, want)
    missing = [int(v) for v in table.column("t_missing").to_pylist()]
    assert missing == [int(r["t"] is None) for r in rows]
