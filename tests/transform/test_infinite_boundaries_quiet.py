"""A column with many +inf values gets boundaries stored as 1.7976931348623157e308. Encoding
with them (global buckets, per-key buckets of an unknown key, piecewise linear edges) and
raw values beyond float32 round to float32 inf as TensorFlow's cast does, without numpy's
"RuntimeWarning: overflow encountered in cast" lines in `transform` or `make-elwc`.

Oracle: float32 bucket indices written out from the data (values below 189, from 189 on,
and +inf), not from the encoder.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from beam_prep.pipelines import analyze

from beam_prep.transform.layers import BatchEncoder

SPEC = """features:
  - {name: price, kind: numeric, num_buckets: 4}
  - {name: pk, column: price, kind: numeric, per_key: store, num_buckets: 4, scaling: none}
  - {name: pwl, column: price, kind: numeric, scaling: piecewise_linear, num_buckets: 4}
"""
BIG = 1.7976931348623157e308


def _rows() -> list[dict]:
    # 60% +inf: the second and third quantile boundaries are infinite
    return [{"qid": i // 10, "label": i % 3, "store": f"s{i % 3}",
             "price": float("inf") if i % 5 < 3 else float(i)} for i in range(300)]


@pytest.fixture(scope="module")
def art(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("inf_bounds")
    for name, rows in (("in", _rows()),
                       ("enc", _rows() + [{"qid": 99, "label": 0, "store": "unseen",
                                           "price": 1e300}])):
        with open(tmp / f"{name}.jsonl", "w") as f:
            f.writelines(json.dumps(r).replace("Infinity", "1e999") + "\n" for r in rows)
    (tmp / "spec.yaml").write_text(SPEC)
    analyze.run(["--spec", str(tmp / "spec.yaml"), "--input", str(tmp / "in.jsonl"),
                 "--output", str(tmp / "art"), "--quiet", "--no_report"])
    stats = json.loads((tmp / "art" / "manifest.json").read_text())["features"]
    assert stats["price"]["stats"]["boundaries"] == [189.0, BIG, BIG]
    return tmp


def _bucket(v: float) -> int:
    """float32(BIG) is +inf: a finite value below 189 is bucket 0, from 189 bucket 1, and
    +inf (and 1e300, inf in float32) reaches past both infinite boundaries: 3; -1e300 is
    -inf in float32: bucket 0."""
    return 3 if v > float(np.finfo(np.float32).max) else int(v >= 189)


def test_encoder_is_quiet_and_buckets_as_float32(art):
    batch = pa.RecordBatch.from_pylist(
        [{"price": v, "store": s} for v, s in ((1.0, "zz"), (200.0, "zz"),
                                               (float("inf"), "zz"), (1e300, None),
                                               (-1e300, "zz"))])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any RuntimeWarning fails the test
        enc = BatchEncoder(str(art / "art"))
        out = enc.encode(batch)
    want = [_bucket(v) for v in (1.0, 200.0, float("inf"), 1e300, -1e300)]
    assert out["price_bucket"].values.reshape(-1).tolist() == want
    # an unknown key falls back to the global boundaries
    assert out["pk_bucket"].values.reshape(-1).tolist() == want
    assert out["pk"].values.reshape(-1).tolist() == [1.0, 200.0, np.inf, np.inf, -np.inf]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "beam_prep.cli", *args], capture_output=True,
                          text=True, timeout=300)


@pytest.mark.slow  # two CLI subprocesses (~25 s); the encoder test above covers the fix
def test_transform_and_make_elwc_print_no_numpy_warning(art):
    p = _cli("transform", "--artifacts", str(art / "art"), "--input", str(art / "enc.jsonl"),
             "--output", str(art / "enc"), "--output_format", "parquet")
    assert p.returncode == 0, p.stderr
    assert "Warning" not in p.stderr, p.stderr
    table = pq.read_table(str(art / "enc" / "data"))
    prices = [r["price"] for r in _rows()] + [1e300]
    assert table.column("price_bucket").to_pylist() == [_bucket(v) for v in prices]
    # make-elwc rejects values beyond float32 (the 180 infinite prices: value_out_of_range);
    # the 120 finite rows are encoded against the infinite boundaries
    p = _cli("make-elwc", "--input", str(art / "in.jsonl"), "--input_format", "jsonl",
             "--query_id_column", "qid", "--label_column", "label", "--example_columns",
             "price", "--output", str(art / "elwc"), "--artifacts", str(art / "art"),
             "--max_bad_fraction", "0.7")
    assert p.returncode == 0, p.stderr
    assert "Warning" not in p.stderr, p.stderr
    stats = json.loads((art / "elwc" / "stats.json").read_text())
    assert stats["input"]["rejected_by_reason"] == {"value_out_of_range": 180}, stats
