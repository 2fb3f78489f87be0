"""Byte-range splits of CSV/JSONL: record-aligned, true row numbers, same rows as a whole read.

Oracles: range starts are computed here from the line starts of the bytes; rows and rejects of a
split read are compared with the same file read whole (split size 0).
"""

from __future__ import annotations

import gzip
import json

import pytest

from beam_prep.io.inputs.byte_ranges import plan_ranges
from beam_prep.io.inputs.readers import list_splits, read_split

COLUMNS = {"a": "int64", "b": "string"}


def _line_starts(data: bytes) -> list[int]:
    return [0] + [i + 1 for i, c in enumerate(data) if c == 10 and i + 1 < len(data)]


def _expected_starts(data: bytes, size: int, header: bool) -> list[int]:
    starts = _line_starts(data)
    lowest = starts[1] if header else 0  # a CSV range never starts in the header line
    out = [0]
    for k in range(1, -(-len(data) // size)):
        later = [s for s in starts if s >= k * size and s >= lowest]
        if later and later[0] > out[-1]:
            out.append(later[0])
    return out


def _read_all(path, split_bytes):
    rows, rejected, seen = [], [], 0
    splits = list_splits(str(path), "csv" if str(path).endswith(".csv") else "jsonl",
                         split_bytes=split_bytes)
    for split in splits:
        for r in read_split(split, COLUMNS, batch_size=3):
            rows += r.batch.to_pylist()
            rejected += [(x.row, x.reason, x.record) for x in r.rejected]
            seen += r.rows_seen
    return splits, rows, sorted(rejected), seen


def _jsonl_bytes(n=60):
    lines = []
    for i in range(1, n + 1):
        if i % 11 == 0:
            lines.append("{not json")
        elif i % 13 == 0:
            lines.append("")  # blank line: numbered, not a record
        elif i % 7 == 0:
            lines.append(json.dumps({"a": "x", "b": "bad int"}))
        else:
            lines.append(json.dumps({"a": i, "b": f"v{i}" * (i % 4)}))
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("size", [1, 17, 64, 100, 333])
def test_jsonl_ranges_start_at_line_starts_with_their_line_numbers(tmp_path, size):
    data = _jsonl_bytes()
    p = tmp_path / "d.jsonl"
    p.write_bytes(data)
    ranges = plan_ranges(str(p), "jsonl", size)
    starts = _expected_starts(data, size, header=False)
    assert ranges is not None and [r.start for r in ranges] == starts
    assert [r.end for r in ranges] == starts[1:] + [len(data)]
    assert [r.first_row for r in ranges] == [data[:s].count(b"\n") + 1 for s in starts]


@pytest.mark.parametrize("size", [1, 23, 90])
def test_jsonl_split_read_equals_the_whole_read(tmp_path, size):
    p = tmp_path / "d.jsonl"
    p.write_bytes(_jsonl_bytes())
    whole = _read_all(p, 0)
    split = _read_all(p, size)
    assert len(whole[0]) == 1 and len(split[0]) > 3
    assert split[1:] == whole[1:]
    # rejects keep their true line numbers (every 11th line is malformed JSON)
    assert [r[0] for r in whole[2] if r[1] == "malformed_json"] == [11, 22, 33, 44, 55]


def _csv_bytes(newline=b"\n"):
    lines = [b"a,b"]
    for i in range(1, 50):
        if i % 9 == 0:
            lines.append(b"")  # empty line: pyarrow skips it, not numbered
        elif i % 10 == 0:
            lines.append(b"%d,x,extra" % i)  # wrong column count
        elif i % 8 == 0:
            lines.append(b"nan_text,y")  # not an integer
        else:
            lines.append(b'%d,"v %d, quoted"' % (i, i))
    return newline.join(lines) + newline


@pytest.mark.parametrize("newline", [b"\n", b"\r\n"])
@pytest.mark.parametrize("size", [1, 29, 120])
def test_csv_split_read_equals_the_whole_read(tmp_path, size, newline):
    data = _csv_bytes(newline)
    p = tmp_path / "d.csv"
    p.write_bytes(data)
    ranges = plan_ranges(str(p), "csv", size)
    assert [r.start for r in ranges] == _expected_starts(data, size, header=True)
    whole = _read_all(p, 0)
    split = _read_all(p, size)
    assert len(split[0]) > 3
    assert split[1:] == whole[1:]
    assert whole[3] == 49 - 5  # 5 empty lines are not rows


def test_csv_with_a_quoted_newline_is_not_split(tmp_path):
    p = tmp_path / "q.csv"
    p.write_bytes(b'a,b\n1,x\n2,"two\nlines"\n' + b"3,y\n" * 50)
    assert plan_ranges(str(p), "csv", 10) is None
    assert len(list_splits(str(p), "csv", split_bytes=10)) == 1


def test_csv_with_lone_carriage_returns_is_not_split(tmp_path):
    p = tmp_path / "cr.csv"
    p.write_bytes(b"a,b\r1,x\r" + b"2,y\r" * 50)
    assert plan_ranges(str(p), "csv", 10) is None


def test_gzip_small_and_disabled_files_are_not_split(tmp_path):
    data = _jsonl_bytes()
    gz = tmp_path / "d.jsonl.gz"
    gz.write_bytes(gzip.compress(data))
    assert plan_ranges(str(gz), "jsonl", 10) is None
    plain = tmp_path / "d.jsonl"
    plain.write_bytes(data)
    assert plan_ranges(str(plain), "jsonl", len(data)) is None
    assert plan_ranges(str(plain), "jsonl", 0) is None
    assert plan_ranges(str(plain), "tfrecord", 10) is None


def test_split_ids_are_distinct(tmp_path):
    p = tmp_path / "d.csv"
    p.write_bytes(b"a,b\n" + b"\n" * 40 + b"1,x\n" * 5)  # ranges of empty lines only
    ids = [s.split_id for s in list_splits(str(p), "csv", split_bytes=4)]
    assert len(ids) == len(set(ids)) > 1


def test_a_csv_whose_only_rows_are_invalid_reads_no_phantom_rows(tmp_path):
    # (found by the split tests: a column-less table sliced to batch_size gave null rows)
    p = tmp_path / "bad.csv"
    p.write_bytes(b"a,b\n1,x,extra\n2,y,extra\n")
    _, rows, rejected, seen = _read_all(p, 0)
    assert rows == [] and seen == 2
    assert [(r[0], r[1]) for r in rejected] == [(1, "wrong_column_count"),
                                                (2, "wrong_column_count")]


@pytest.mark.parametrize("block", [3, 16])
def test_planning_in_small_blocks_gives_the_same_ranges(tmp_path, monkeypatch, block):
    from beam_prep.io.inputs import byte_ranges

    for newline in (b"\n", b"\r\n"):
        data = _csv_bytes(newline)
        p = tmp_path / "d.csv"
        p.write_bytes(data)
        expected = plan_ranges(str(p), "csv", 29)
        monkeypatch.setattr(byte_ranges, "_BLOCK", block)
        assert plan_ranges(str(p), "csv", 29) == expected
        monkeypatch.undo()
    late = tmp_path / "late.csv"  # the quoted newline is far from the first block
    late.write_bytes(b"a,b\n" + b'1,"x"\n' * 40 + b'2,"two\nlines"\n')
    monkeypatch.setattr(byte_ranges, "_BLOCK", block)
    assert plan_ranges(str(late), "csv", 29) is None
