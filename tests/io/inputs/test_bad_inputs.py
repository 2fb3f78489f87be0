"""Bad inputs: a bad row is a counted reject, a bad file an InputError naming it, never a crash.

Expected values are written from how each file is built (row numbers, counts), not taken from
the reader's output.
"""

from __future__ import annotations

import datetime
import decimal
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from beam_prep.errors import InputError
from beam_prep.io.inputs import csv_reader
from beam_prep.io.inputs.readers import (
    available_columns,
    check_columns,
    infer_format,
    list_splits,
    read_split,
)

COLUMNS = {"a": "int64", "b": "string"}


def _read(path, columns=COLUMNS, batch_size=2):
    rows, rejected, seen = [], [], 0
    for split in list_splits(str(path), infer_format(str(path))):
        for r in read_split(split, columns, batch_size=batch_size):
            rows += r.batch.to_pylist()
            rejected += r.rejected
            seen += r.rows_seen
    for r in rejected:
        json.loads(r.to_json())  # every reject can be written to rejected.jsonl
    return rows, rejected, seen


def test_a_zero_byte_csv_is_an_empty_input(tmp_path):
    empty, good = tmp_path / "part-0.csv", tmp_path / "part-1.csv"
    empty.write_bytes(b"")
    good.write_bytes(b"a,b\n1,x\n")
    assert _read(empty) == ([], [], 0)
    assert available_columns(str(empty), "csv") == []
    # The empty part file comes first in the glob: the check looks at the next file.
    check_columns([str(empty), str(good)], "csv", {"a": "fa", "b": "fb"})
    with pytest.raises(InputError, match="'c'.*part-1.csv"):
        check_columns([str(empty), str(good)], "csv", {"c": "fc"})


def test_a_header_only_csv_without_newline_has_columns_and_no_rows(tmp_path):
    p = tmp_path / "h.csv"
    p.write_bytes(b"a,b")
    assert available_columns(str(p), "csv") == ["a", "b"]
    assert _read(p) == ([], [], 0)


def test_a_csv_row_longer_than_the_parse_block_is_read(tmp_path):
    p = tmp_path / "big.csv"
    big = "y" * (20 << 20)  # 20 MiB: more than two 8 MiB blocks
    p.write_text(f"a,b\n1,x\n2,{big}\n3,z\n")
    rows, rejected, seen = _read(p)
    assert [r["a"] for r in rows] == [1, 2, 3] and rows[1]["b"] == big
    assert rejected == [] and seen == 3


def test_a_restart_with_larger_blocks_keeps_rows_and_row_numbers(tmp_path, monkeypatch):
    monkeypatch.setattr(csv_reader, "CSV_FIRST_BLOCK", 1 << 10)
    lines = ["a,b"]
    for i in range(1, 41):
        if i in (5, 33):
            lines.append(f"{i},x,extra")  # wrong column count: rejected as data row i
        elif i == 30:
            lines.append(f"{i}," + "w" * 5000)  # longer than 4 KiB: two restarts
        else:
            lines.append(f"{i},v{i}")
    p = tmp_path / "r.csv"
    p.write_text("\n".join(lines) + "\n")
    rows, rejected, seen = _read(p, batch_size=3)
    assert [r["a"] for r in rows] == [i for i in range(1, 41) if i not in (5, 33)]
    assert [(r.row, r.reason) for r in rejected] == [(5, "wrong_column_count"),
                                                    (33, "wrong_column_count")]
    assert seen == 40


def test_a_csv_header_longer_than_the_header_block_is_read(tmp_path):
    names = ["a", "b"] + [f"c{i}" for i in range(14000)]  # about 87 KB of header
    p = tmp_path / "wide.csv"
    p.write_text(",".join(names) + "\n" + ",".join(["7", "q"] + ["0"] * 14000) + "\n")
    assert available_columns(str(p), "csv") == names
    assert _read(p)[0] == [{"a": 7, "b": "q"}]


def test_a_duplicate_csv_column_names_the_file_and_the_column(tmp_path):
    p = tmp_path / "dup.csv"
    p.write_bytes(b"a,b,a\n1,2,3\n")
    with pytest.raises(InputError, match=r"dup\.csv.*'a' twice.*columns 1 and 3"):
        _read(p)
    with pytest.raises(InputError, match=r"dup\.csv.*'a' twice"):
        check_columns([str(p)], "csv", {"a": "fa"})


@pytest.mark.parametrize("array, type_text", [
    (pa.array([datetime.datetime(2020, 1, 1), None], pa.timestamp("us")), "timestamp[us]"),
    (pa.array([decimal.Decimal("1.50"), None], pa.decimal128(5, 2)), "decimal128(5, 2)"),
    (pa.array([{"x": 1}, None]), "struct<x: int64>"),
])
@pytest.mark.parametrize("target", ["string", "int64", "float64"])
def test_parquet_columns_of_unreadable_types_fail_naming_column_and_type(
        tmp_path, array, type_text, target):
    p = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": array, "b": ["x", "y"]}), p)
    with pytest.raises(InputError) as up_front:
        check_columns([str(p)], "parquet", {"a": "fa", "b": "fb"})
    with pytest.raises(InputError) as while_reading:
        _read(p, {"a": target, "b": "string"})
    for e in (up_front, while_reading):
        assert "'a'" in str(e.value) and type_text in str(e.value) and "t.parquet" in str(e.value)


def test_uint64_beyond_int64_is_a_counted_reject_and_converts_to_float(tmp_path):
    p = tmp_path / "u.parquet"
    pq.write_table(pa.table({"a": pa.array([1, 2**64 - 1, 2**63 - 1, None], pa.uint64()),
                             "b": ["w", "x", "y", "z"]}), p)
    rows, rejected, seen = _read(p)
    assert rows == [{"a": 1, "b": "w"}, {"a": 2**63 - 1, "b": "y"}, {"a": None, "b": "z"}]
    assert [(r.row, r.reason) for r in rejected] == [(2, "out_of_range")]
    assert json.loads(rejected[0].record) == {"a": 2**64 - 1, "b": "x"}
    rows, rejected, _ = _read(p, {"a": "float64"})
    assert [r["a"] for r in rows] == [1.0, 2.0**64, 2.0**63, None] and not rejected


def test_int64_beyond_2_to_53_converts_to_the_nearest_float(tmp_path):
    p = tmp_path / "i.parquet"
    pq.write_table(pa.table({"a": pa.array([2**60 + 1, -(2**62) - 3], pa.int64())}), p)
    rows, rejected, _ = _read(p, {"a": "float64"})
    assert [r["a"] for r in rows] == [float(2**60), -float(2**62)] and not rejected


def test_a_corrupt_parquet_file_is_an_error_naming_it(tmp_path):
    p = tmp_path / "bad.parquet"
    p.write_bytes(b"PAR1" + b"\x00" * 40 + b"PAR1")
    for call in (lambda: list_splits(str(p), "parquet"),
                 lambda: check_columns([str(p)], "parquet", {"a": "fa"})):
        with pytest.raises(InputError, match=r"Parquet file .*bad\.parquet"):
            call()


def test_a_jsonl_line_nested_200000_deep_is_rejected_alone(tmp_path):
    p = tmp_path / "deep.jsonl"
    deep = "[" * 200_000 + "]" * 200_000
    p.write_text('{"a":1,"b":"x"}\n{"a":' + deep + '}\n{"a":3}\n')
    rows, rejected, seen = _read(p)
    assert rows == [{"a": 1, "b": "x"}, {"a": 3, "b": None}] and seen == 3
    assert [(r.row, r.reason) for r in rejected] == [(2, "malformed_json")]
    assert "recursion" in rejected[0].detail


def test_jsonl_dates_stay_text_and_nested_values_are_rejected_by_row(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text('{"a": 1, "b": "2020-01-01 00:00:00"}\n{"a": 2, "b": "2021-02-03"}\n'
                 '{"a": 3, "b": {"x": 1}}\n{"a": 4, "b": [["y"]]}\n{"a": 5, "b": "z"}\n')
    rows, rejected, seen = _read(p, batch_size=10)
    assert rows == [{"a": 1, "b": "2020-01-01 00:00:00"}, {"a": 2, "b": "2021-02-03"},
                    {"a": 5, "b": "z"}] and seen == 5
    assert [(r.row, r.reason) for r in rejected] == [(3, "malformed_json"),
                                                    (4, "malformed_json")]
    q = tmp_path / "only_dates.jsonl"  # the fast path (every line well formed)
    q.write_text('{"a": 1, "b": "2020-01-01 00:00:00"}\n{"a": 2, "b": "2021-02-03"}\n')
    assert _read(q, batch_size=10)[0] == [{"a": 1, "b": "2020-01-01 00:00:00"},
                                         {"a": 2, "b": "2021-02-03"}]


def test_gzip_csv_files_are_read_including_empty_and_header_only_ones(tmp_path):
    import gzip

    full, header, empty = tmp_path / "f.csv.gz", tmp_path / "h.csv.gz", tmp_path / "e.csv.gz"
    full.write_bytes(gzip.compress(b"a,b\n" + b"".join(b"%d,x%d\n" % (i, i) for i in range(5))))
    header.write_bytes(gzip.compress(b"a,b"))
    empty.write_bytes(gzip.compress(b""))
    rows, rejected, seen = _read(full)
    assert rows == [{"a": i, "b": f"x{i}"} for i in range(5)] and seen == 5
    assert available_columns(str(header), "csv") == ["a", "b"] and _read(header)[2] == 0
    assert available_columns(str(empty), "csv") == [] and _read(empty)[2] == 0


@pytest.mark.parametrize("good_rows", [1, 20000])  # in the header's parse block, and after it
def test_a_csv_row_with_wrong_columns_and_bytes_not_utf8_is_named_in_the_error(tmp_path,
                                                                               good_rows):
    """pyarrow decodes an invalid row's text as UTF-8 before our handler can set it aside, so a
    line cut inside a multi-byte character fails the read. The header is still found and the
    error names the row and the fix (it said "Cannot read the CSV header", or row 1)."""
    p = tmp_path / "cut.csv"
    good = "".join(f"{i},x\n" for i in range(good_rows)).encode()
    p.write_bytes(b"a,b\n" + good + b"\xd4\xff,y,extra\n" + b"7,z\n")
    assert available_columns(str(p), "csv") == ["a", "b"]
    with pytest.raises(InputError, match=rf"cut.csv: row #{good_rows + 2} .*wrong number of "
                                         r"columns and bytes that are not UTF-8.*Fix or remove"):
        _read(p, batch_size=100000)
