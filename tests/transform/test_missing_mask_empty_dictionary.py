"""``missing_indicator`` on a Parquet string column whose every cell is null.

Such a column is read as a dictionary array with an empty dictionary; the indicator indexed
it and the transform job died with an IndexError. Oracle: the row is missing iff its cell
is null or ``""``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from beam_prep.pipelines import analyze

from beam_prep.io.inputs.readers import Split, read_split
from beam_prep.transform.layers import BatchEncoder
from beam_prep.transform.values import missing_mask


def test_dictionary_with_empty_dictionary():
    col = pa.DictionaryArray.from_arrays(pa.array([None, None], pa.int32()),
                                         pa.array([], pa.string()))
    np.testing.assert_array_equal(missing_mask(col), [1.0, 1.0])
    col = pa.DictionaryArray.from_arrays(pa.array([0, None, 1], pa.int32()),
                                         pa.array(["", "x"]))
    np.testing.assert_array_equal(missing_mask(col), [1.0, 1.0, 0.0])


def test_all_null_parquet_string_column_through_the_encoder(tmp_path):
    cells = [None] * 6
    pq.write_table(pa.table({"s": pa.array(cells, pa.string())}), str(tmp_path / "t.parquet"))
    (tmp_path / "spec.yaml").write_text(
        "features:\n  - {name: s, kind: string, missing_indicator: true}\n"
        "  - {name: t, kind: string, column: s, impute: most_frequent, missing_indicator: "
        "true}\n")
    art = str(tmp_path / "art")
    analyze.run(["--spec", str(tmp_path / "spec.yaml"), "--input", str(tmp_path / "t.parquet"),
                 "--output", art, "--quiet"])
    enc = BatchEncoder(art)
    [result] = list(read_split(Split(str(tmp_path / "t.parquet"), "parquet"), enc.columns))
    out = enc.encode(result.batch)
    for key in ("s_missing", "t_missing"):
        np.testing.assert_array_equal(out[key].values.ravel(), [1.0] * len(cells))
