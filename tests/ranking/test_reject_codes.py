"""make-elwc counts its rejected lines per reason code, for every input format.

Each input holds the same kinds of hostile rows (label -1, label inf, feature value 1e39, a line
that does not parse or a row without a query id) and is cut into several pieces, so the
``rejected_by_reason`` counts of ``stats.json`` are sums over pieces. The expected counts and
lines are written by hand from the inputs below.
"""

from __future__ import annotations

import glob
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from beam_prep.pipelines import make_elwc

from beam_prep.ranking.data.value_rules import REJECT_CODES
from beam_prep.report.elwc import render_elwc

LETOR = """\
1 qid:1 1:0.5
-1 qid:1 1:0.25
inf qid:1 1:1
2 qid:2 1:1e39
0 qid:2 1:1
1 qid:2 junk
-2 qid:3 1:1
3 qid:3 2:inf
0 qid:3 1:2
"""

CSV = """\
qid,label,x
q1,1,0.5
q1,-1,0.25
q1,inf,0.125
q2,2,1e39
q2,0,1.0
q2,1
q3,-2,1.0
q3,1,2.0,9
q3,0,3.0
"""

JSONL = """\
{"qid": "q1", "label": 1, "x": 0.5}
{"qid": "q1", "label": -1, "x": 0.25}
{"qid": "q1", "label": Infinity, "x": 0.125}
{"qid": "q2", "label": 2, "x": 1e39}
{"qid": "q2", "label": 0, "x": 1.0}
not json
{"qid": "q3", "label": "high", "x": 1.0}
{"qid": "q3", "label": 0, "x": 3.0}
"""

PARQUET = {"qid": ["q1", "q1", "q1", "q2", "q2", None, "q3", "q3"],
           "label": [1.0, -1.0, np.inf, 2.0, 0.0, 1.0, np.nan, 0.0],
           "x": [0.5, 0.25, 0.125, 1e39, 1.0, 1.0, 1.0, 3.0]}

# format -> (lines, {line: code} of the rejected ones)
EXPECTED = {
    "letor": (9, {2: "label_negative", 3: "label_out_of_range", 4: "value_out_of_range",
                  6: "unparsable", 7: "label_negative", 8: "value_out_of_range"}),
    # CSV rows are data rows (the header is row 0); rows 6 and 8 have the wrong field count
    "csv": (9, {2: "label_negative", 3: "label_out_of_range", 4: "value_out_of_range",
                6: "unparsable", 7: "label_negative", 8: "unparsable"}),
    "jsonl": (8, {2: "label_negative", 3: "label_out_of_range", 4: "value_out_of_range",
                  6: "unparsable", 7: "type_mismatch"}),
    "parquet": (8, {2: "label_negative", 3: "label_out_of_range", 4: "value_out_of_range",
                    6: "missing_query_id", 7: "label_not_a_number"}),
}


def _write_input(directory, fmt: str) -> str:
    path = os.path.join(directory, f"in.{'txt' if fmt == 'letor' else fmt}")
    if fmt == "parquet":  # row groups of 3 rows: three pieces
        pq.write_table(pa.table(PARQUET), path, row_group_size=3)
    else:
        with open(path, "w", encoding="utf-8") as f:
            f.write({"letor": LETOR, "csv": CSV, "jsonl": JSONL}[fmt])
    return path


def _rejected_records(out: str) -> list[dict]:
    names = sorted(glob.glob(os.path.join(out, "rejected", "rejected-?????-of-?????.jsonl")))
    return [json.loads(x) for n in names for x in open(n, encoding="utf-8")]


@pytest.mark.parametrize("fmt", ["letor", "csv", "jsonl", "parquet"])
def test_rejected_lines_are_counted_per_reason_code(tmp_path, fmt, capsys):
    path = _write_input(str(tmp_path), fmt)
    out, summary = str(tmp_path / "out"), tmp_path / "summary.json"
    args = ["--input", path, "--input_format", fmt, "--output", out, "--num_shards", "2",
            "--max_bad_fraction", "0.9", "--summary_json", str(summary), "--no_report"]
    if fmt == "letor":
        args += ["--input_split_bytes", "40"]  # several pieces, counted apart then summed
    assert make_elwc.main(args) == 0

    lines, by_line = EXPECTED[fmt]
    expected = {}
    for code in by_line.values():
        expected[code] = expected.get(code, 0) + 1
    inp = json.load(open(os.path.join(out, "stats.json")))["input"]
    assert inp["rejected_by_reason"] == expected
    assert list(inp["rejected_by_reason"]) == sorted(expected)
    assert sum(inp["rejected_by_reason"].values()) == inp["lines_rejected"] == len(by_line)
    assert inp["lines"] == lines
    assert set(expected) <= set(REJECT_CODES)

    records = _rejected_records(out)
    assert [(r["line"], r["code"]) for r in records] == sorted(by_line.items())
    assert all(r["file"] == os.path.basename(path) and r["reason"] for r in records)

    shown = ", ".join(f"{code} {n}" for code, n in sorted(expected.items()))
    got = json.loads(summary.read_text())
    assert got["details"]["rejected_by_reason"] == expected
    assert got["counts"]["lines_rejected"] == len(by_line)
    assert f"\n  rejected_by_reason: {shown}\n" in capsys.readouterr().out
    assert f"  rejected lines: {len(by_line)} ({shown}; see " in make_elwc.summary(out)
    html = render_elwc(out)
    for code, n in expected.items():
        assert f"<tr><th>rejected: {code}</th><td>{n}</td></tr>" in html


def test_a_run_without_rejects_counts_no_reason(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("1 qid:1 1:0.5\n0 qid:1 1:1\n", encoding="utf-8")
    out = str(tmp_path / "out")
    assert make_elwc.main(["--input", str(path), "--output", out, "--quiet",
                           "--no_report"]) == 0
    inp = json.load(open(os.path.join(out, "stats.json")))["input"]
    assert (inp["lines_rejected"], inp["rejected_by_reason"]) == (0, {})


def test_every_reason_code_is_documented():
    doc = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "ranking_data.md"),
               encoding="utf-8").read()
    missing = [code for code in REJECT_CODES if f"| `{code}` |" not in doc]
    assert not missing, f"add {missing} to the reason code table of docs/ranking_data.md"
