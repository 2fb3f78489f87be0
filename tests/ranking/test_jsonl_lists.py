"""make-elwc's JSONL reader: one odd line costs that line only, and lines keep their numbers.

Found while fixing the same fault in the analysis reader
(tests/io/inputs/test_jsonl_list_slow_path.py):
the first line with a value decided a column's JSON type, so a scalar on the first line of a
list column rejected every list of the file; and pyarrow skips blank lines, so a clean file with
a blank line reported the rows after it one line too early. The oracle: ``json.loads`` line by
line, with the documented rule (a scalar in a list column is a one-value list).
"""

from __future__ import annotations

import json
import os
import random

from beam_prep.pipelines import make_elwc

from beam_prep.ranking.data.jsonl import read_jsonl_table
from tests.ranking.test_make_elwc import read_rejected


def _lines(seed: int, count: int) -> list[str]:
    rnd = random.Random(seed)
    out = []
    for i in range(count):
        row = {"qid": f"q{i % 7}", "label": rnd.randint(0, 3)}
        roll = rnd.random()
        if roll < 0.15:
            row["tags"] = rnd.choice("abc")  # a scalar in a list column
        elif roll < 0.9:
            row["tags"] = [rnd.choice("abc") for _ in range(rnd.randint(0, 3))]
        out.append(json.dumps(row))
    return out


def _oracle(lines: list[str]) -> tuple[list[list[str] | None], list[int]]:
    """The tags of each good line (a scalar as a one-value list) and its 1-based line."""
    tags, numbers = [], []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        v = obj.get("tags")
        tags.append(v if v is None or isinstance(v, list) else [v])
        numbers.append(number)
    return tags, numbers


def test_a_scalar_first_in_a_list_column_rejects_no_list():
    lines = ['{"qid": "q", "label": 1, "tags": "a"}'] + _lines(1, 500)
    table, rejected, numbers = read_jsonl_table(("\n".join(lines) + "\n").encode(), "f.jsonl")
    want, want_numbers = _oracle(lines)
    assert rejected == []
    assert table.column("tags").to_pylist() == want
    assert (numbers or list(range(1, table.num_rows + 1))) == want_numbers


def test_blank_and_bad_lines_keep_every_other_line_with_its_number():
    lines = _lines(2, 400)
    for at, odd in ((3, ""), (50, "   "), (51, "{not json"), (200, ""), (300, "[1]")):
        lines.insert(at, odd)
    table, rejected, numbers = read_jsonl_table(("\n".join(lines) + "\n").encode(), "f.jsonl")
    want, want_numbers = _oracle(lines)
    assert [r["line"] for r in rejected] == [52, 301]  # "{not json" and "[1]"
    assert numbers == want_numbers
    assert table.column("tags").to_pylist() == want


def test_a_list_of_another_json_type_is_rejected_alone_by_the_majority_rule():
    lines = ['{"qid": "q", "label": 1, "tags": [1, 2]}'] + _lines(3, 100) + [
        '{"qid": "q", "label": 1, "tags": ["a", 2]}']
    table, rejected, numbers = read_jsonl_table(("\n".join(lines) + "\n").encode(), "f.jsonl")
    assert [r["line"] for r in rejected] == [1, 102]
    assert "list of number here but a list of string" in rejected[0]["reason"]
    assert numbers == list(range(2, 102))


def test_make_elwc_names_the_right_line_after_a_blank_line(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "x.jsonl").write_text(
        '{"qid": "q1", "label": 1, "doc": "a"}\n\n'
        '{"qid": "q1", "label": 0, "doc": "b"}\n'
        '{"qid": "", "label": 2, "doc": "c"}\n')  # line 4: no query id
    out = str(tmp_path / "out")
    make_elwc.run(["--input", str(d / "*"), "--input_format", "jsonl", "--output", out,
                   "--max_bad_fraction", "0.5", "--query_id_feature", "qid"])
    assert [(r["line"], r["reason"]) for r in read_rejected(out)] == [(4, "missing query id")]
    assert os.path.exists(os.path.join(out, "stats.json"))
