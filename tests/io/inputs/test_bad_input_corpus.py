"""The bad-input corpus (tests/data/bad_inputs/) through the real jobs.

Each corpus file's rows are annotated in ``tests/data/bad_inputs/make_corpus.py``; the expected
counts below are read off those comments (one reason per bad row), not copied from a run. A
per-row problem must be a counted reject in ``rejected/``; a per-file problem must stop the job
with exit code 1 and a message naming the file, never with a traceback.
"""

from __future__ import annotations

import json
import os

import pytest
from beam_prep.pipelines import analyze

from beam_prep import cli

CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "data",
                      "bad_inputs")
SPEC = os.path.join(CORPUS, "spec.yaml")

# glob → (rows read, {reason: rejected rows})
EXPECTED = {
    "csv/rows.csv": (8, {"wrong_column_count": 2, "unparsable_number": 3, "invalid_utf8": 1}),
    "csv_parts/*.csv": (2, {}),
    "jsonl/rows.jsonl": (8, {"malformed_json": 4, "unparsable_number": 1, "wrong_type": 1}),
    "parquet/rows.parquet": (3, {"out_of_range": 1}),
    "tfrecord/rows.tfrecord": (5, {"malformed_record": 2, "invalid_utf8": 1}),
}


@pytest.mark.parametrize("pattern", list(EXPECTED))  # every format, in the default suite
def test_analyze_counts_every_bad_row_by_reason(tmp_path, pattern):
    out = tmp_path / "out"
    analyze.run(["--spec", SPEC, "--input", os.path.join(CORPUS, pattern), "--output", str(out),
                 "--max_bad_fraction", "1"])
    rows, reasons = EXPECTED[pattern]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["input"]["rows_read"] == rows
    assert manifest["input"]["rejected_by_reason"] == reasons
    rejected = [json.loads(line) for rel in manifest["input"]["rejected_files"]
                for line in (out / rel).read_text().splitlines()]
    assert len(rejected) == sum(reasons.values())
    for r in rejected:  # file, row and reason of every reject
        assert r["source"].startswith(CORPUS) and r["row"] >= 1 and r["reason"] in reasons


@pytest.mark.parametrize("name, words", [
    ("fatal/duplicate_column.csv", ["'cat' twice"]),
    ("fatal/corrupt.parquet", ["Cannot open Parquet file"]),
    ("fatal/timestamp_column.parquet", ["'id'", "timestamp[ms]"]),
])
def test_a_bad_file_stops_analyze_with_a_message_naming_it(tmp_path, capsys, name, words):
    code = cli.main(["analyze", "--spec", SPEC, "--input", os.path.join(CORPUS, name),
                     "--output", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 1
    assert "Traceback" not in err and os.path.join(CORPUS, name) in err
    for w in words:
        assert w in err


def test_a_bad_file_found_while_the_job_runs_is_one_message_without_traceback(
        tmp_path, capsys, caplog):
    good, bad = "csv_parts/part-00002.csv", "fatal/duplicate_column.csv"
    code = cli.main(["analyze", "--spec", SPEC, "--input", os.path.join(CORPUS, good),
                     "--input", os.path.join(CORPUS, bad), "--output", str(tmp_path / "out"),
                     "--quiet"])  # (a progress handler would outlive capsys)
    err = capsys.readouterr().err
    assert code == 1 and os.path.join(CORPUS, bad) in err and "'cat' twice" in err
    assert "Traceback" not in err
    assert not [r for r in caplog.records if r.exc_info]  # Beam's log of it is filtered


def test_make_elwc_counts_every_bad_letor_line(tmp_path):
    from beam_prep.pipelines import make_elwc

    out = tmp_path / "out"
    make_elwc.run(["--input", os.path.join(CORPUS, "letor", "rows.txt"), "--output", str(out),
                   "--max_bad_fraction", "1"])
    stats = json.loads((out / "stats.json").read_text())
    assert stats["input"]["lines"] == 5 and stats["input"]["lines_rejected"] == 3
    rejected = [json.loads(line) for path in sorted((out / "rejected").glob("rejected-*.jsonl"))
                for line in path.read_text().splitlines()]
    assert [(r["file"], r["line"]) for r in rejected] == [("rows.txt", 2), ("rows.txt", 3),
                                                          ("rows.txt", 4)]
    assert rejected[0]["reason"] == "label 'x' is not a number"
    assert rejected[1]["reason"].startswith("missing qid:")
    assert rejected[2]["reason"].startswith("bad feature token '1:abc'")
