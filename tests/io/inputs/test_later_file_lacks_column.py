"""A CSV / Parquet input file after the first without a column the spec reads fails the job.

The start-up check (``check_columns``) reads the first non-empty file only. Found by the
hostile review: a later file without the column was read as all-missing values and the run
succeeded (``missing_count`` grew by the file's rows, without a word). The readers' own
contract (absent columns as nulls, used by JSONL / TFRecord and the raw-batch helpers) is kept;
the jobs read with ``strict_columns``.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from beam_prep.pipelines import analyze, transform

from beam_prep.errors import InputError
from beam_prep.io.inputs.readers import Split, read_split

SPEC = "features:\n  - {name: a, kind: string}\n  - {name: b, kind: numeric}\n"


def _inputs(folder, fmt: str) -> str:
    folder.mkdir()
    if fmt == "csv":
        (folder / "p1.csv").write_text("a,b\nx,1\ny,2\n")
        (folder / "p2.csv").write_text("a\nz\n")
    else:
        pq.write_table(pa.table({"a": ["x", "y"], "b": [1.0, 2.0]}), folder / "p1.parquet")
        pq.write_table(pa.table({"a": ["z"]}), folder / "p2.parquet")
    return str(folder / f"*.{fmt}")


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_analyze_fails_naming_the_file_and_the_column(tmp_path, fmt):
    (tmp_path / "spec.yaml").write_text(SPEC)
    pattern = _inputs(tmp_path / "in", fmt)
    with pytest.raises(InputError, match=rf"\['b'\] not found in the .* of .*p2\.{fmt}"):
        analyze.run(["--spec", str(tmp_path / "spec.yaml"), "--input", pattern,
                     "--output", str(tmp_path / "art"), "--no_report", "--quiet"])
    assert not (tmp_path / "art" / "manifest.json").exists()


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_transform_fails_too(tmp_path, fmt):
    (tmp_path / "spec.yaml").write_text(SPEC)
    (tmp_path / "train.csv").write_text("a,b\nx,1\ny,2\n")
    analyze.run(["--spec", str(tmp_path / "spec.yaml"), "--input", str(tmp_path / "train.csv"),
                 "--output", str(tmp_path / "art"), "--no_report", "--quiet"])
    pattern = _inputs(tmp_path / "in", fmt)
    with pytest.raises(InputError, match=rf"not found in the .* of .*p2\.{fmt}"):
        transform.run(["--artifacts", str(tmp_path / "art"), "--input", pattern,
                       "--output", str(tmp_path / "enc"), "--quiet"])


def test_the_reader_default_still_reads_absent_columns_as_missing(tmp_path):
    pq.write_table(pa.table({"a": ["z"]}), tmp_path / "p.parquet")
    (result,) = read_split(Split(str(tmp_path / "p.parquet"), "parquet"),
                           {"a": "string", "b": "float64"})
    assert result.batch.column("a").cast(pa.string()).to_pylist() == ["z"]
    assert result.batch.column("b").to_pylist() == [None]


def test_a_spec_naming_thousands_of_absent_columns_gets_a_short_error(tmp_path):
    from beam_prep.io.inputs.readers import check_columns

    (tmp_path / "d.csv").write_text("a\nx\n")
    required = {f"c{i}": f"f{i}" for i in range(5000)}
    with pytest.raises(InputError) as e:  # was one 300 KB line listing every column
        check_columns([str(tmp_path / "d.csv")], "csv", required)
    assert "'c0' (feature 'f0')" in str(e.value) and "4,980 more" in str(e.value)
    assert len(str(e.value)) < 2000
