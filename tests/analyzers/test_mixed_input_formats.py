"""An --input glob matching files of two formats is refused in one line.

Found by the hostile review: the format was inferred from the first file only, so with
``mix/a.csv`` and ``mix/b.parquet`` the Parquet file was parsed as CSV ("Cannot parse CSV file
mix/b.parquet: row #3 ... not UTF-8"), and a stray ``notes.txt`` after a CSV file would have
been read as CSV.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from beam_prep import cli
from beam_prep.errors import InputError
from beam_prep.io.inputs.readers import infer_common_format

SPEC = "features:\n  - {name: a, kind: string}\n"


def test_two_formats_name_both_files():
    assert infer_common_format(["x/a.csv", "x/b.csv.gz"]) == "csv"
    with pytest.raises(InputError, match=r"'x/a\.csv' \(csv\) and 'x/b\.parquet' \(parquet\)"):
        infer_common_format(["x/a.csv", "x/b.parquet"])
    with pytest.raises(InputError, match="Cannot tell the input format of 'x/notes.txt'"):
        infer_common_format(["x/a.csv", "x/notes.txt"])


@pytest.mark.parametrize("verb", ["analyze", "transform"])
def test_the_jobs_refuse_a_mixed_glob(tmp_path, capsys, verb):
    (tmp_path / "spec.yaml").write_text(SPEC)
    (tmp_path / "train.csv").write_text("a\nx\ny\n")
    mix = tmp_path / "mix"
    mix.mkdir()
    (mix / "a.csv").write_text("a\nx\n")
    pq.write_table(pa.table({"a": ["y", "z"]}), mix / "b.parquet")
    art = str(tmp_path / "art")
    assert cli.main(["analyze", "--spec", str(tmp_path / "spec.yaml"), "--input",
                     str(tmp_path / "train.csv"), "--output", art, "--quiet",
                     "--no_report"]) == 0
    argv = (["analyze", "--spec", str(tmp_path / "spec.yaml"), "--output",
             str(tmp_path / "out"), "--no_report"] if verb == "analyze" else
            ["transform", "--artifacts", art, "--output", str(tmp_path / "out")])
    assert cli.main([*argv, "--input", str(mix / "*"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "matches files of two formats" in err and "Cannot parse CSV" not in err
