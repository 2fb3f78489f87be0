"""Writes the bad-input corpus beside this file (run once; the files are checked in).

    python tests/data/bad_inputs/make_corpus.py

Every file is small and every bad row is bad for one stated reason; the expected counts are
written out in ``tests/io/inputs/test_bad_input_corpus.py`` from these comments, not from a run.
"""

from __future__ import annotations

import datetime
import os

import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
DEPTH = 5000  # deeper than Python's json module can recurse (RecursionError)


def _write(rel: str, data: bytes) -> None:
    path = os.path.join(HERE, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def csv_files() -> None:
    _write("csv/rows.csv", b"".join([
        b"cat,num,id\n",
        b"a,1.5,1\n",                        # 1 good
        b"b,2.5,2,9\n",                      # 2 wrong_column_count (4 fields)
        b"c,abc,3\n",                        # 3 unparsable_number (num)
        b"\xff\xfe,4.5,4\n",                 # 4 invalid_utf8 (cat)
        b"e,5.5,12.5\n",                     # 5 unparsable_number (id is an integer feature)
        b"f,6.5,6\n",                        # 6 good
        b"g,7.5,99999999999999999999\n",     # 7 unparsable_number (beyond int64)
        b"h,8.5\n",                          # 8 wrong_column_count (2 fields)
    ]))
    _write("csv_parts/part-00000.csv", b"")                 # empty part file: 0 rows
    _write("csv_parts/part-00001.csv", b"cat,num,id")      # header only, no newline: 0 rows
    _write("csv_parts/part-00002.csv", b"cat,num,id\na,1,1\nb,2,2\n")  # 2 good rows
    _write("fatal/duplicate_column.csv", b"cat,num,cat\na,1,b\n")


def jsonl_files() -> None:
    deep = "[" * DEPTH + "]" * DEPTH
    lines = [
        '{"cat": "a", "num": 1.5, "id": 1}',   # 1 good
        'not json',                            # 2 malformed_json
        '{"cat": "c", "num": ' + deep + '}',   # 3 malformed_json (nested too deeply)
        '{"cat": "d", "num": "x", "id": 4}',   # 4 unparsable_number (num)
        '{"cat": ["a", "b"], "id": 5}',        # 5 malformed_json (nested value in a column)
        '[1, 2]',                              # 6 malformed_json (not an object)
        '{"cat": "g", "id": 1.5}',             # 7 wrong_type (id is an integer feature)
        '{"cat": "h", "num": 8.5, "id": 8}',   # 8 good
    ]
    _write("jsonl/rows.jsonl", ("\n".join(lines) + "\n").encode())


def parquet_files() -> None:
    os.makedirs(os.path.join(HERE, "parquet"), exist_ok=True)
    os.makedirs(os.path.join(HERE, "fatal"), exist_ok=True)
    pq.write_table(pa.table({
        "cat": ["a", "b", "c"],
        "num": pa.array([1.0, None, 3.0], pa.float64()),
        "id": pa.array([1, 2**64 - 1, 3], pa.uint64()),   # row 2: out_of_range
    }), os.path.join(HERE, "parquet/rows.parquet"))
    pq.write_table(pa.table({
        "cat": ["a"], "num": [1.0],
        "id": pa.array([datetime.datetime(2024, 1, 2)], pa.timestamp("ms")),
    }), os.path.join(HERE, "fatal/timestamp_column.parquet"))
    _write("fatal/corrupt.parquet", b"PAR1" + b"\x00" * 24 + b"PAR1")


def tfrecord_files() -> None:
    import tensorflow as tf

    def example(cat: bytes | None, num: float | None, id_: int | None) -> bytes:
        ex = tf.train.Example()
        if cat is not None:
            ex.features.feature["cat"].bytes_list.value.append(cat)
        if num is not None:
            ex.features.feature["num"].float_list.value.append(num)
        if id_ is not None:
            ex.features.feature["id"].int64_list.value.append(id_)
        return ex.SerializeToString()

    path = os.path.join(HERE, "tfrecord/rows.tfrecord")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path) as w:
        w.write(example(b"a", 1.5, 1))          # 1 good
        w.write(b"\xff\xff\xff\xff")            # 2 malformed_record (not a tf.Example)
        w.write(example(b"c", 3.5, None))       # 3 good (id missing)
        w.write(example(b"\xff", 4.5, 4))       # 4 invalid_utf8 (cat)
        w.write(b"\x0a\x7fshort")               # 5 malformed_record (truncated field)


def letor_files() -> None:
    _write("letor/rows.txt", b"".join([
        b"1 qid:1 1:0.5 2:1\n",    # 1 good
        b"x qid:1 1:0.5\n",        # 2 label 'x' is not a number
        b"0 1:0.5\n",              # 3 missing qid:
        b"2 qid:2 1:abc\n",        # 4 bad feature token
        b"0 qid:2 1:0.1\n",        # 5 good
        b"# a comment line\n",     # not a document, not rejected
    ]))


if __name__ == "__main__":
    csv_files()
    jsonl_files()
    parquet_files()
    tfrecord_files()
    letor_files()
