"""Inputs the analyze / make-elwc command lines refused or misread (issue 21 items 6 and 8).

A spec of hashed features only read no rows ("the input files are empty"); a column of a
hashed or ``cross:`` feature missing from the data was not detected; a bare relative glob
(``day*.csv``) matched nothing while ``./day*.csv`` worked; the ``0/1 splits`` progress line
printed before validation errors.
"""

from __future__ import annotations

import json
import os

import pytest
from beam_prep.pipelines import analyze

from beam_prep import cli
from beam_prep.errors import InputError

CSV = "x,c,d\n1,a,u\n2,b,v\n3,a,u\n"


@pytest.fixture
def data(tmp_path):
    (tmp_path / "day1.csv").write_text(CSV)
    (tmp_path / "day2.csv").write_text("x,c,d\n4,b,w\n")
    return tmp_path


def _spec(tmp_path, *entries: str) -> str:
    path = tmp_path / "spec.yaml"
    path.write_text("features:\n" + "".join(f"  - {e}\n" for e in entries))
    return str(path)


def test_a_spec_of_hashed_features_only_reads_and_counts_rows(data):
    spec = _spec(data, "{name: h, kind: hashed, num_bins: 8, column: c}",
                 "{name: hc, kind: hashed, num_bins: 8, cross: [c, d]}")
    out = data / "out"
    analyze.run(["--spec", spec, "--input", str(data / "day*.csv"), "--output", str(out)])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["input"]["rows_read"] == 4  # 3 + 1 data rows, counted by hand
    assert manifest["input"]["rows_rejected"] == 0


@pytest.mark.parametrize("entry", [
    "{name: h, kind: hashed, num_bins: 8, column: zz}",
    "{name: h, kind: hashed, num_bins: 8, cross: [c, zz]}",
    "{name: h, kind: hashed, num_bins: 8, expr: 'lower(zz)'}",
])
def test_a_missing_hashed_or_cross_column_fails_before_the_pipeline(data, monkeypatch, entry):
    spec = _spec(data, "{name: x, kind: numeric}", entry)

    def no_pipeline(*a, **k):
        raise AssertionError("the pipeline was built")

    monkeypatch.setattr(analyze.beam, "Pipeline", no_pipeline)
    with pytest.raises(InputError, match="'zz'.*feature 'h'"):
        analyze.run(["--spec", spec, "--input", str(data / "day1.csv"), "--output",
                     str(data / "out")])


def test_a_bare_relative_glob_matches_like_a_dotted_one(data, monkeypatch):
    monkeypatch.chdir(data)
    spec = _spec(data, "{name: x, kind: numeric}")
    analyze.run(["--spec", spec, "--input", "day*.csv", "--output", "out"])
    manifest = json.loads((data / "out" / "manifest.json").read_text())
    assert manifest["input"]["rows_read"] == 4  # both files: 3 + 1 rows


def test_make_elwc_takes_a_bare_relative_glob(tmp_path, monkeypatch):
    from beam_prep.ranking.data.options import ElwcOptions
    from beam_prep.ranking.data.transforms import list_input_files

    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("1 qid:1 1:0.5\n")
    (tmp_path / "b.txt").write_text("0 qid:2 1:0.5\n")
    got = list_input_files(["*.txt"], ElwcOptions())
    assert [p for _, p, _ in got] == ["a.txt", "b.txt"]


def test_no_progress_line_before_a_validation_error(data, capsys):
    spec = _spec(data, "{name: x, kind: numeric, num_buckets: 1}")
    code = cli.main(["analyze", "--spec", spec, "--input", str(data / "day1.csv"),
                     "--output", str(data / "out")])
    err = capsys.readouterr().err
    assert code == 1
    assert err.splitlines() == [err.splitlines()[0]] and "num_buckets" in err
    assert "splits" not in err


def test_no_progress_line_before_an_output_error(data, capsys):
    out = data / "out"
    out.mkdir()
    (out / "foreign.txt").write_text("x")
    code = cli.main(["analyze", "--spec", _spec(data, "{name: x, kind: numeric}"),
                     "--input", str(data / "day1.csv"), "--output", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and "splits" not in err and len(err.strip().splitlines()) == 1, err
    assert os.listdir(out) == ["foreign.txt"]
