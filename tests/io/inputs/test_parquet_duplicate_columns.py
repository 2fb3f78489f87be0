"""A Parquet file whose schema names a column twice: one line naming file and column.

pyarrow writes such files (``Table.from_arrays(..., names=["a", "b", "a"])``); before the fix
``analyze`` died with ``KeyError: 'Column a does not exist in schema'`` (a traceback) and
``make-elwc`` with the same KeyError inside the pipeline.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from beam_prep import cli
from beam_prep.errors import InputError
from beam_prep.io.inputs.readers import check_columns, list_splits, read_split


def _write(path, names) -> str:
    arrays = [pa.array([f"v{i}", f"w{i}"]) for i in range(len(names))]
    pq.write_table(pa.Table.from_arrays(arrays, names=names), path)
    return str(path)


def test_the_column_check_and_the_reader_name_the_duplicate(tmp_path):
    path = _write(tmp_path / "d.parquet", ["a", "b", "a"])
    with pytest.raises(InputError, match=r"d\.parquet names the column 'a' twice.*1 and 3"):
        check_columns([path], "parquet", {"b": "f"})
    with pytest.raises(InputError, match="names the column 'a' twice"):
        for split in list_splits(path, "parquet"):
            list(read_split(split, {"b": "string"}))


def test_analyze_and_make_elwc_fail_in_one_line(tmp_path, capsys):
    path = _write(tmp_path / "d.parquet", ["qid", "label", "a", "a"])
    (tmp_path / "spec.yaml").write_text("features:\n  - {name: a, kind: string}\n")
    assert cli.main(["analyze", "--spec", str(tmp_path / "spec.yaml"), "--input", path,
                     "--output", str(tmp_path / "art"), "--quiet", "--no_report"]) == 1
    assert cli.main(["make-elwc", "--input", path, "--input_format", "parquet",
                     "--output", str(tmp_path / "elwc"), "--quiet", "--no_report"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "KeyError" not in err
    assert err.count("names the column 'a' twice") == 2


def test_a_schema_with_distinct_names_is_read(tmp_path):
    path = _write(tmp_path / "ok.parquet", ["a", "b"])
    rows = [r for split in list_splits(path, "parquet")
            for r in read_split(split, {"a": "string"})]
    assert rows[0].batch.column(0).cast(pa.string()).to_pylist() == ["v0", "w0"]
