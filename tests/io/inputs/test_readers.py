"""Readers: typed batches, bad rows set aside with reasons and row numbers, per format."""

from __future__ import annotations

import pyarrow as pa
import pytest

from beam_prep.errors import InputError
from beam_prep.io.inputs.columns import normalize
from beam_prep.io.inputs.readers import available_columns, infer_format, list_splits, read_split

COLUMNS = {"a": "int64", "b": "string", "c": "float64"}


def _read_all(path: str, **kw):
    fmt = infer_format(path)
    rows, rejected, seen = [], [], 0
    for split in list_splits(path, fmt, **kw):
        for r in read_split(split, COLUMNS, batch_size=2):
            rows += r.batch.to_pylist()
            rejected += r.rejected
            seen += r.rows_seen
    return rows, sorted(rejected, key=lambda r: r.row), seen


def test_csv_rows_types_and_rejections(tmp_path):
    p = tmp_path / "t.csv"
    p.write_bytes(b'a,b,c\n1,x,2.5\n2\n3,\xff\xfe,1\nx,y,z\n"",,\n5,y,1,9\n6," w ",-inf\n')
    rows, rejected, seen = _read_all(str(p))
    assert rows == [{"a": 1, "b": "x", "c": 2.5}, {"a": None, "b": None, "c": None},
                    {"a": 6, "b": " w ", "c": float("-inf")}]
    assert [(r.row, r.reason) for r in rejected] == [
        (2, "wrong_column_count"), (3, "invalid_utf8"), (4, "unparsable_number"),
        (6, "wrong_column_count")]
    assert seen == 7


def test_jsonl_malformed_lines_do_not_take_neighbours_down(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text('{"a":1,"b":"x","c":2}\n{"a":"q"}\nnot json\n{"a":3,"b":null}\n'
                 '{"a":4.5,"b":"z"}\n')
    rows, rejected, seen = _read_all(str(p))
    assert rows == [{"a": 1, "b": "x", "c": 2.0}, {"a": 3, "b": None, "c": None}]
    assert [(r.row, r.reason) for r in rejected] == [
        (2, "unparsable_number"), (3, "malformed_json"), (5, "wrong_type")]
    assert seen == 5


def test_parquet_splits_by_row_groups_and_keeps_row_numbers(tmp_path):
    import pyarrow.parquet as pq

    p = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": [1, 2, 3, 4, 5], "b": ["v", "w", None, "y", "z"],
                             "c": [0.5, None, 1.0, 2.0, 3.0]}), p, row_group_size=2)
    splits = list_splits(str(p), "parquet", parquet_rows_per_split=2)
    assert [(s.row_groups, s.first_row) for s in splits] == [((0,), 1), ((1,), 3), ((2,), 5)]
    rows, rejected, seen = _read_all(str(p), parquet_rows_per_split=2)
    assert [r["a"] for r in rows] == [1, 2, 3, 4, 5] and not rejected and seen == 5


def _row_group_file(tmp_path, sizes):
    import pyarrow.parquet as pq

    p = tmp_path / "groups.parquet"
    with pq.ParquetWriter(p, pa.schema([("a", pa.int64()), ("b", pa.string()),
                                        ("c", pa.float64())])) as w:
        start = 0
        for n in sizes:
            ids = list(range(start, start + n))
            w.write_table(pa.table({"a": ids, "b": [f"t{i % 7}" for i in ids],
                                    "c": [i / 2 for i in ids]}), row_group_size=n)
            start += n
    return p


def test_parquet_batches_hold_whole_row_groups_within_the_caps(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    from beam_prep.io.inputs import formats

    sizes = [3, 4, 2, 12, 1, 9, 2]
    p = _row_group_file(tmp_path, sizes)
    meta = pq.ParquetFile(p).metadata
    assert [formats.parquet_batch_rows(meta, g, 5) for g in range(7)] == [5, 5, 5, 12, 5, 9, 5]
    monkeypatch.setattr(formats, "PARQUET_MAX_BATCH_ROWS", 10)
    assert formats.parquet_batch_rows(meta, 3, 5) == 10
    total = meta.row_group(3).total_byte_size
    cap = total // 2
    monkeypatch.setattr(formats, "PARQUET_MAX_BATCH_BYTES", cap)
    got = formats.parquet_batch_rows(meta, 3, 2)
    assert got * total <= cap * 12 < (got + 1) * total  # the most rows within the cap
    assert formats.parquet_batch_rows(meta, 3, 8) == 8  # never below batch_size
    monkeypatch.undo()
    split = list_splits(str(p), "parquet")[0]
    batches = list(read_split(split, COLUMNS, batch_size=5))
    assert [b.batch.num_rows for b in batches] == sizes
    got = [r["a"] for b in batches for r in b.batch.to_pylist()]
    assert got == list(range(sum(sizes)))
    assert [v for b in batches for v in b.batch.column("b").to_pylist()] == [
        f"t{i % 7}" for i in range(sum(sizes))]


def test_tfrecord_lists_and_corrupt_records(tmp_path):
    import tensorflow as tf

    p = tmp_path / "t.tfrecord"
    with tf.io.TFRecordWriter(str(p)) as w:
        for i in range(3):
            ex = tf.train.Example()
            ex.features.feature["b"].bytes_list.value.extend([b"x%d" % i, b"y"])
            ex.features.feature["a"].int64_list.value.append(i)
            w.write(ex.SerializeToString())
        w.write(b"\x07garbage")
    rows, rejected, seen = _read_all(str(p))
    assert [r["b"] for r in rows] == [["x0", "y"], ["x1", "y"], ["x2", "y"]]
    # One value in every record: read as a flat column (see beam_prep.io.inputs.readers).
    assert [r["a"] for r in rows] == [0, 1, 2]
    assert [(r.row, r.reason) for r in rejected] == [(4, "malformed_record")]
    assert seen == 4
    assert available_columns(str(p), "tfrecord") == ["a", "b"]


def test_format_inference_and_errors():
    assert infer_format("gs://b/x/part-0.tfrecord.gz") == "tfrecord"
    assert infer_format("x.PARQUET") == "parquet"
    with pytest.raises(InputError, match="--input_format"):
        infer_format("data.bin")


@pytest.mark.parametrize("values, target, expected, bad", [
    (["1", " 2 ", "", "1e3", "0x1"], "int64", [1, 2, None, None, None],
     [False, False, False, True, True]),
    (["nan", "Inf", "-1.5e-3", ".5", "1,5"], "float64", [None, float("inf"), -1.5e-3, 0.5, None],
     [False, False, False, False, True]),
    ([1.0, 2.5, None], "int64", [1, None, None], [False, True, False]),
    ([7, None], "string", ["7", None], [False, False]),
])
def test_normalize(values, target, expected, bad):
    arr, bad_mask, _ = normalize(pa.array(values), target)
    got = arr.to_pylist()
    if target == "float64" and values[0] == "nan":
        assert got[0] != got[0]  # NaN parses as NaN (a value, not missing)
        got, expected = got[1:], expected[1:]
    assert got == expected
    assert bad_mask.tolist() == bad
