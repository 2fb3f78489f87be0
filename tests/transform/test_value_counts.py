"""Transform job: a column whose value count per row does not match the feature's shape.

tf.Example features are lists; the reader hands a batch over flat when every record holding
the feature has exactly one value, else as a list column (Parquet list columns are always
lists). Before the fix the job died with a pyarrow traceback on both mismatches:

* a list feature (``shape: list``) whose batch came flat (``list_flatten`` of a string);
* a scalar feature whose batch came as a list (``index_in`` / ``cast`` of a list).

Now a flat batch of a list feature is one value per row, a list column of a scalar feature
is read row by row (no value: missing; one value: that value) and a row with several values
is rejected (reason ``multiple_values``) naming the column and the fix. The oracle is the
same job on the same rows stored the unambiguous way (Parquet lists for the list feature,
CSV for the scalar ones).
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from beam_prep.pipelines import analyze, transform

SPEC = """
features:
  - {name: tags, kind: string, shape: list, max_values: 3}
  - {name: color, kind: string}
  - {name: size, kind: numeric, num_buckets: 3}
"""


def _example(tags: list[str] | None, color: list[str], size: list[float]) -> bytes:
    from tensorflow.core.example import example_pb2

    ex = example_pb2.Example()
    if tags is not None:
        ex.features.feature["tags"].bytes_list.value.extend(t.encode() for t in tags)
    ex.features.feature["color"].bytes_list.value.extend(c.encode() for c in color)
    ex.features.feature["size"].float_list.value.extend(size)
    return ex.SerializeToString()


def _write_tfrecord(path, records: list[bytes]) -> None:
    import tensorflow as tf

    with tf.io.TFRecordWriter(str(path)) as w:
        for r in records:
            w.write(r)


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    root = tmp_path_factory.mktemp("counts")
    pq.write_table(pa.table({
        "tags": [["a", "b"], ["b"], ["c", "a", "b"], [], ["a"]],
        "color": ["red", "blue", "red", "green", "red"],
        "size": [1.0, 2.0, 3.0, 4.0, 5.0]}), root / "train.parquet")
    (root / "spec.yaml").write_text(SPEC)
    analyze.run(["--spec", str(root / "spec.yaml"), "--input", str(root / "train.parquet"),
                 "--output", str(root / "art"), "--no_report", "--quiet"])
    return str(root / "art")


def _transform(artifacts: str, data, out, *extra: str) -> tuple[dict, list[dict]]:
    transform.run(["--artifacts", artifacts, "--input", str(data), "--output", str(out),
                   "--output_format", "parquet", "--quiet", *extra])
    manifest = json.loads((out / "transform.json").read_text())
    rows = pa.concat_tables([pq.read_table(p) for p in sorted((out / "data").glob("*"))])
    return manifest, json.loads(json.dumps(rows.to_pylist()).replace("NaN", '"nan"'))


def test_a_list_feature_whose_records_hold_one_value_each(artifacts, tmp_path):
    tags = [["b"], ["a"], ["zz"], None, ["c"]]
    colors = ["red", "blue", "red", "red", "green"]
    _write_tfrecord(tmp_path / "one.tfrecord",
                    [_example(t, [c], [float(i)]) for i, (t, c) in enumerate(zip(tags, colors))])
    pq.write_table(pa.table({"tags": pa.array([t if t is not None else None for t in tags],
                                              pa.list_(pa.string())),
                             "color": colors, "size": [float(i) for i in range(5)]}),
                   tmp_path / "same.parquet")
    got_manifest, got = _transform(artifacts, tmp_path / "one.tfrecord", tmp_path / "a")
    _, want = _transform(artifacts, tmp_path / "same.parquet", tmp_path / "b")
    assert got_manifest["counts"]["rows_written"] == 5
    assert got == want
    assert [r["tags"][1:] for r in got] == [[0, 0]] * 5  # one value, then padding


def test_a_scalar_feature_with_several_values_in_a_row_is_rejected_by_row(artifacts,
                                                                         tmp_path):
    records = [_example(["a"], ["red"], [1.0]),
               _example(["b"], ["blue", "red"], [2.0]),   # two colours
               _example(["a"], ["green"], []),             # no size: missing
               _example(["c"], ["red"], [3.0, 4.0]),       # two sizes
               _example(["a", "b"], ["blue"], [5.0])]
    _write_tfrecord(tmp_path / "multi.tfrecord", records)
    pq.write_table(pa.table({"tags": [["a"], ["a"], ["a", "b"]],
                             "color": ["red", "green", "blue"],
                             "size": [1.0, None, 5.0]}), tmp_path / "good.parquet")
    manifest, got = _transform(artifacts, tmp_path / "multi.tfrecord", tmp_path / "a",
                               "--max_bad_fraction", "0.5")
    _, want = _transform(artifacts, tmp_path / "good.parquet", tmp_path / "b")
    counts = manifest["counts"]
    assert (counts["rows_read"], counts["rows_written"], counts["rows_rejected"]) == (5, 3, 2)
    assert counts["rejected_by_reason"] == {"multiple_values": 2}
    assert got == want
    rejected = [json.loads(line) for p in sorted((tmp_path / "a" / "rejected").glob("*"))
                for line in p.read_text().splitlines()]
    details = sorted(r["detail"] for r in rejected)
    assert details[0].startswith("column 'color' holds 2 values") and "shape: list" in \
        details[0]
    assert details[1].startswith("column 'size' holds 2 values")


def test_a_parquet_list_column_read_by_a_scalar_feature(artifacts, tmp_path):
    pq.write_table(pa.table({"tags": [["a"], ["b"], ["c"]],
                             "color": [["red"], [], ["red", "blue"]],
                             "size": [1.0, 2.0, 3.0]}), tmp_path / "lists.parquet")
    pq.write_table(pa.table({"tags": [["a"], ["b"]], "color": ["red", None],
                             "size": [1.0, 2.0]}), tmp_path / "flat.parquet")
    manifest, got = _transform(artifacts, tmp_path / "lists.parquet", tmp_path / "a",
                               "--max_bad_fraction", "0.5")
    _, want = _transform(artifacts, tmp_path / "flat.parquet", tmp_path / "b")
    assert manifest["counts"]["rejected_by_reason"] == {"multiple_values": 1}
    assert got == want
