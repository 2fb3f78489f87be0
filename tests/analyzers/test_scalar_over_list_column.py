"""One rule for a scalar feature whose column holds lists (a Parquet list column): a row
with no value is missing, a row with one value is that value, a row with several is rejected
(`multiple_values`), in `analyze` as in `transform` (the generated layers take one value per
row). Before, analyze counted every value of such rows while transform rejected them.

Oracle: the vocabulary counts, moments and rejected rows computed here from the rows.
"""

from __future__ import annotations

import collections
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from beam_prep import cli

TOKENS = [["a"], ["b", "c"], [], ["a"], None, ["c"], ["a", "a", "b"], ["b"]]
NUMBERS = [[1.0], [2.0], [3.0, 4.0], [], [5.0], None, [6.0], [7.0]]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("scalar_lists")
    pq.write_table(pa.table({"t": pa.array(TOKENS, pa.list_(pa.string())),
                             "x": pa.array(NUMBERS, pa.list_(pa.float64()))}),
                   str(tmp / "d.parquet"))
    (tmp / "spec.yaml").write_text("features:\n  - {name: t, kind: string}\n"
                                   "  - {name: x, kind: numeric}\n")
    args = ["--input", str(tmp / "d.parquet"), "--max_bad_fraction", "0.9"]
    assert cli.main(["analyze", "--spec", str(tmp / "spec.yaml"), "--output",
                     str(tmp / "art"), "--no_report", "--quiet", *args]) == 0
    assert cli.main(["transform", "--artifacts", str(tmp / "art"), "--output",
                     str(tmp / "enc"), "--output_format", "parquet", "--quiet", *args]) == 0
    return tmp


def _kept() -> list[int]:
    """Rows where no column holds more than one value."""
    return [i for i in range(len(TOKENS))
            if len(TOKENS[i] or []) <= 1 and len(NUMBERS[i] or []) <= 1]


def test_analyze_counts_only_rows_with_at_most_one_value(runs):
    manifest = json.loads((runs / "art" / "manifest.json").read_text())
    kept = _kept()
    tokens = collections.Counter(TOKENS[i][0] for i in kept if TOKENS[i])
    counts = [json.loads(x) for x in (runs / "art" / "vocab" / "t.counts.jsonl")
              .read_text().splitlines()]
    assert {t: c for t, c in counts} == dict(tokens)
    values = [NUMBERS[i][0] for i in kept if NUMBERS[i]]
    stats = manifest["features"]["x"]["stats"]
    assert stats["count"] == len(values)
    assert stats["mean"] == pytest.approx(np.mean(values), rel=1e-12)
    assert stats["variance"] == pytest.approx(np.var(values), rel=1e-12)
    assert stats["missing_count"] == sum(1 for i in kept if not NUMBERS[i])
    inp = manifest["input"]
    assert inp["rows_rejected"] == len(TOKENS) - len(kept)
    assert inp["rejected_by_reason"] == {"multiple_values": len(TOKENS) - len(kept)}


def test_transform_writes_and_rejects_the_same_rows(runs):
    analysed = json.loads((runs / "art" / "manifest.json").read_text())["input"]
    written = json.loads((runs / "enc" / "transform.json").read_text())["counts"]
    assert written["rows_written"] == len(_kept())
    assert written["rows_rejected"] == analysed["rows_rejected"]
    assert written["rejected_by_reason"] == analysed["rejected_by_reason"]
