"""One input file named twice (two globs, ``./``, an absolute path, a symlink) is read once;
a bare glob in the working directory works for make-elwc.

Found by the hostile review: ``analyze --input 'd*.csv' --input ./d.csv`` read every row twice
(``rows_read`` doubled, every count doubled) because files were made distinct by their
spelling; ``make-elwc --input 'r*.txt'`` failed with "input file 'r.txt' disappeared while
the job was being planned" (the size estimate listed the bare glob without its ``./``).
"""

from __future__ import annotations

import json
import os

from beam_prep.pipelines import analyze, make_elwc

from beam_prep.io.inputs.patterns import expand_patterns

ROWS = "color,size\nred,1\nblue,2\nred,3\n"


def test_analyze_reads_a_file_named_four_ways_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.csv").write_text(ROWS)
    os.symlink("d.csv", tmp_path / "link.csv")
    (tmp_path / "spec.yaml").write_text("features:\n  - {name: color, kind: string}\n")
    analyze.run(["--spec", "spec.yaml", "--input", "d*.csv", "--input", "./d.csv",
                 "--input", str(tmp_path / "d.csv"), "--input", "link.csv",
                 "--output", "art", "--no_report", "--quiet"])
    manifest = json.loads((tmp_path / "art" / "manifest.json").read_text())
    assert manifest["input"]["rows_read"] == ROWS.count("\n") - 1
    assert manifest["input"]["files"] == 1
    counts = [json.loads(line) for line in
              (tmp_path / "art" / "vocab" / "color.counts.jsonl").read_text().splitlines()]
    assert sorted(counts) == [["blue", 1], ["red", 2]]


def test_distinct_files_keep_other_files(tmp_path):
    for name in ("a.csv", "b.csv"):
        (tmp_path / name).write_text(ROWS)
    got = expand_patterns([str(tmp_path / "*.csv"), str(tmp_path / "." / "b.csv")])
    assert sorted(os.path.basename(p) for p in got) == ["a.csv", "b.csv"]


def test_make_elwc_takes_a_bare_glob_and_reads_a_file_named_twice_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r.txt").write_text("1 qid:1 1:0.5 2:1\n0 qid:1 1:0.1 2:0\n2 qid:2 1:0.9\n")
    make_elwc.run(["--input", "r*.txt", "--output", "one", "--no_report", "--quiet"])
    make_elwc.run(["--input", "r*.txt", "--input", "./r.txt", "--output", "two",
                   "--no_report", "--quiet"])
    for out in ("one", "two"):
        stats = json.loads((tmp_path / out / "stats.json").read_text())
        assert stats["input"]["lines"] == 3, out
