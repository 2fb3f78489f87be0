"""JSONL arrays of a list feature survive a block that holds one bad line.

JSONL blocks are parsed by pyarrow; a block holding any line pyarrow cannot take (a malformed
line, a blank line, a scalar where other rows hold arrays, ...) is parsed line by line. Found by
the hostile review: that path rejected every array as "holds a nested value", so one bad line
turned every list row of its 65,536-row block into a rejected row. Now the list features'
columns (``list_columns``) take one level of array of scalars (a scalar is a one-value array),
line by line; other columns still reject arrays.

Oracles: the same rows without the bad line, read by pyarrow's own fast path; and
``json.loads`` line by line with the documented rule (:func:`_oracle`).
"""

from __future__ import annotations

import io
import json
import random

import pyarrow as pa
import pyarrow.json as pa_json

from beam_prep.io.inputs.readers import Split, read_split

COLUMNS = {"tags": "string", "ids": "int64", "n": "float64"}
LISTS = frozenset({"tags", "ids"})
GOOD = [{"tags": ["a", "b"], "ids": [1, 2], "n": 1.5},
        {"tags": [], "ids": [3], "n": 2},
        {"n": 3},
        {"tags": None, "ids": [], "n": None},
        {"tags": ["c"], "ids": [4, 5, 6], "n": 4}]


def _read(path, batch_size=100, lists=LISTS) -> tuple[list[dict], list, int, list[pa.RecordBatch]]:
    rows, rejected, seen, batches = [], [], 0, []
    for r in read_split(Split(str(path), "jsonl"), COLUMNS, batch_size=batch_size,
                        list_columns=lists):
        cols = {name: r.batch.column(name).to_pylist() for name in COLUMNS}
        rows += [dict(zip(cols, values)) for values in zip(*cols.values())]
        rejected += r.rejected
        seen += r.rows_seen
        batches.append(r.batch)
    return rows, rejected, seen, batches


def test_a_bad_line_does_not_reject_the_arrays_of_its_block(tmp_path):
    clean, dirty = tmp_path / "clean.jsonl", tmp_path / "dirty.jsonl"
    lines = [json.dumps(r) for r in GOOD]
    clean.write_text("\n".join(lines) + "\n")
    dirty.write_text("\n".join(lines[:2] + ["{not json"] + lines[2:]) + "\n")
    want, none, _, _ = _read(clean)
    got, rejected, _, _ = _read(dirty)
    assert none == [] and len(want) == len(GOOD)
    assert got == want
    assert [(r.row, r.reason) for r in rejected] == [(3, "malformed_json")]


def _scalar(v) -> bool:
    return v is None or isinstance(v, (str, int, float)) and not isinstance(v, bool)


def _oracle(line: str):
    """``(row, None)`` for a good line, ``(None, reason)`` for a bad one, ``(None, None)``
    for a blank line: json.loads, then the documented rule per column."""
    if not line.strip():
        return None, None
    try:
        obj = json.loads(line)
    except ValueError:
        return None, "malformed_json"
    if not isinstance(obj, dict):
        return None, "malformed_json"
    row = {}
    for c in COLUMNS:
        v = obj.get(c)
        if c in LISTS:
            if not isinstance(v, list):
                v = None if v is None else [v]
            if v is not None and not all(_scalar(x) for x in v):
                return None, "malformed_json"
        elif not _scalar(v):
            return None, "malformed_json"
        row[c] = v
    if any(isinstance(x, float) for x in row["tags"] or []):
        return None, "wrong_type"  # text column: write numbers with a fraction as strings
    row["tags"] = None if row["tags"] is None else [
        x if x is None or isinstance(x, str) else str(x) for x in row["tags"]]
    row["n"] = None if row["n"] is None else float(row["n"])
    return row, None


def _mixed_lines(count: int, seed: int) -> list[str]:
    rnd = random.Random(seed)
    words = ["a", "b", "c", "é", "x y"]
    bad = ['{not json', '', '   ', '[1, 2]', '"text"', '{"tags": [["a"]], "n": 1}',
           '{"ids": [[1, 2]], "n": 1}', '{"ids": [{"k": 1}]}', '{"tags": {"k": "v"}}',
           '{"n": [1.5]}', '{"n": {"a": 1}}', '{"tags": ["a", 1.5]}', '{"tags": 2.5}']
    out = []
    for _ in range(count):
        roll = rnd.random()
        if roll < 0.05:
            out.append(rnd.choice(bad))
            continue
        row = {}
        if rnd.random() < 0.9:
            row["tags"] = (rnd.choice(words) if rnd.random() < 0.1 else
                           [rnd.choice(words) if rnd.random() < 0.9 else rnd.randint(0, 9)
                            for _ in range(rnd.randint(0, 4))])
        if rnd.random() < 0.9:
            row["ids"] = (rnd.randint(-5, 5) if rnd.random() < 0.1 else
                          [rnd.randint(-(2**40), 2**40) for _ in range(rnd.randint(0, 3))])
        if rnd.random() < 0.9:
            row["n"] = rnd.choice([rnd.randint(-3, 3), rnd.uniform(-1e6, 1e6), None])
        out.append(json.dumps(row, ensure_ascii=False))
    return out


def test_a_mixed_block_keeps_exactly_the_lines_the_per_line_oracle_calls_good(tmp_path):
    lines = _mixed_lines(3000, seed=7)
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    judged = [(i + 1, *_oracle(line)) for i, line in enumerate(lines)]
    want_rows = [row for _, row, _ in judged if row is not None]
    want_bad = [(number, reason) for number, _, reason in judged if reason is not None]
    assert len(want_rows) > 2500 and len(want_bad) > 50  # the mix holds both
    for batch_size in (65536, 97):
        rows, rejected, seen, batches = _read(path, batch_size=batch_size)
        assert rows == want_rows
        assert [(r.row, r.reason) for r in rejected] == want_bad
        assert seen == len(want_rows) + len(want_bad)  # blank lines are not records
        assert all(r.record == lines[r.row - 1].strip()[:2000] for r in rejected)
        assert {b.schema.field("tags").type for b in batches} == {pa.large_list(pa.large_string())}
    nested = [r for r in rejected if '[[' in r.record or '[{' in r.record]
    assert nested and all("nested" in r.detail for r in nested)


def test_a_nested_list_in_a_list_column_is_rejected_alone_on_both_paths(tmp_path):
    lines = [json.dumps(r) for r in GOOD]
    for extra in ([], ["{not json"]):  # a clean block (pyarrow first), a block with a bad line
        path = tmp_path / "nested.jsonl"
        path.write_text("\n".join(lines[:2] + ['{"tags": [["a", "b"]], "ids": [1]}',
                                              '{"ids": [[1], [2]]}'] + lines[2:] + extra) + "\n")
        rows, rejected, _, _ = _read(path)
        assert rows == [_oracle(line)[0] for line in lines]
        assert [(r.row, r.reason) for r in rejected][:2] == [(3, "malformed_json"),
                                                             (4, "malformed_json")]
        assert "'tags' holds a nested list" in rejected[0].detail
        assert "'ids' holds a nested list" in rejected[1].detail


def test_the_fast_path_is_unchanged_and_agrees_with_the_line_by_line_path(tmp_path):
    """A clean block is read by pyarrow whatever ``list_columns`` says, and the same lines read
    line by line (a blank line sends the block there) give the same typed batch."""
    lines = [line for line in _mixed_lines(400, seed=3) if _oracle(line)[0] is not None
             and line.strip() and not _has_scalar_in_list(line)]
    clean, blank = tmp_path / "clean.jsonl", tmp_path / "blank.jsonl"
    clean.write_text("\n".join(lines) + "\n", encoding="utf-8")
    blank.write_text("\n".join(lines[:5] + [""] + lines[5:]) + "\n", encoding="utf-8")
    fast = _read(clean, batch_size=65536)
    assert fast[1] == [] and fast[3][0].equals(_read(clean, batch_size=65536, lists=())[3][0])
    table = pa_json.read_json(io.BytesIO(clean.read_bytes()))  # pyarrow's own reading
    assert [r["ids"] for r in fast[0]] == table.column("ids").to_pylist()
    slow = _read(blank, batch_size=65536)
    assert slow[1] == [] and slow[0] == fast[0]
    assert slow[3][0].schema == fast[3][0].schema and slow[3][0].equals(fast[3][0])


def _has_scalar_in_list(line: str) -> bool:
    """A line pyarrow cannot read with the others: a scalar in a list column, or a number
    among the strings of ``tags``."""
    obj = json.loads(line)
    return any(c in obj and obj[c] is not None and not isinstance(obj[c], list)
               for c in LISTS) or not all(isinstance(x, str) for x in obj.get("tags") or [])
